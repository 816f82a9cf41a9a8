from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from common.jobs import job_kind_register
        from labeling.curation.actions import BULK_ACTIONS

        job_kind_register(BULK_ACTIONS)
        # Deleting a campaign deletes its files (uploads, exports, checkpoints, runs, caches):
        # each app names its own (common.storage.campaign_media_register).
        from django.db.models.signals import pre_delete

        from common.storage import campaign_media_on_delete
        from labeling.models import Campaign

        pre_delete.connect(
            campaign_media_on_delete, sender=Campaign, dispatch_uid="labeling.campaign_media"
        )

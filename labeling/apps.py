from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from common.jobs import job_kind_register
        from labeling.curation.actions import BULK_ACTIONS

        job_kind_register(BULK_ACTIONS)

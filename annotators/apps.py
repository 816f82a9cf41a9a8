from django.apps import AppConfig


class AnnotatorsConfig(AppConfig):
    name = "annotators"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotators.snapshots import SNAPSHOT_JOBS
        from common.jobs import job_kind_register

        job_kind_register(SNAPSHOT_JOBS)

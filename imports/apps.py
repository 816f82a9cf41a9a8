from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "imports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from common.jobs import job_kind_register
        from imports.services import IMPORT_JOBS

        job_kind_register(IMPORT_JOBS)

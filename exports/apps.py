from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from common.jobs import job_kind_register
        from exports.services import EXPORT_JOBS

        job_kind_register(EXPORT_JOBS)

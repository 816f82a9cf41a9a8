from django.apps import AppConfig


class CommonConfig(AppConfig):
    name = "common"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A bad endpoint declaration stops the process at start, naming the entry and field,
        # rather than failing the first job that uses it.
        from common.endpoints import endpoints_check

        endpoints_check()

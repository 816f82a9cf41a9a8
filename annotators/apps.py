from django.apps import AppConfig


class AnnotatorsConfig(AppConfig):
    name = "annotators"
    default_auto_field = "django.db.models.BigAutoField"

from __future__ import annotations

from typing import Any

from django.apps import AppConfig


def campaign_uploads(campaign: Any) -> list[str]:
    """The campaign's uploaded files (``imports/<job>/``): deleted with the campaign."""
    from imports.models import ImportJob

    return [
        f"imports/{pk}"
        for pk in ImportJob.objects.filter(campaign=campaign).values_list("pk", flat=True)
    ]


class ImportsConfig(AppConfig):
    name = "imports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from common.jobs import job_kind_register
        from imports.services import IMPORT_JOBS

        job_kind_register(IMPORT_JOBS)
        from common.storage import campaign_media_register

        campaign_media_register(campaign_uploads)

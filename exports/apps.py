from __future__ import annotations

from typing import Any

from django.apps import AppConfig


def campaign_exports(campaign: Any) -> list[str]:
    """The campaign's export files (``exports/<id>/``): deleted with the campaign."""
    from exports.models import Export

    return [
        f"exports/{pk}"
        for pk in Export.objects.filter(campaign=campaign).values_list("pk", flat=True)
    ]


class ExportsConfig(AppConfig):
    name = "exports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from common.jobs import job_kind_register
        from exports.services import EXPORT_JOBS

        job_kind_register(EXPORT_JOBS)
        from common.storage import campaign_media_register

        campaign_media_register(campaign_exports)

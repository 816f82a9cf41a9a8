"""Celery tasks of the manager's tools: take an id, load the row, call one service."""

from __future__ import annotations

from celery import shared_task

from annotators import services
from annotators.models import CampaignSnapshot


@shared_task(name="annotators.snapshot_refresh")
def snapshot_refresh_task(snapshot_id: int) -> str:
    """Compute a campaign's figures. A message for a snapshot that no longer exists is dropped."""
    snapshot = CampaignSnapshot.objects.select_related("campaign").filter(pk=snapshot_id).first()
    if snapshot is None:
        return "missing"
    return services.snapshot_run(snapshot=snapshot).status

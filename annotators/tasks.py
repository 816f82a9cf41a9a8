"""Celery tasks of the manager's tools: take an id, load the row, call one service."""

from __future__ import annotations

from celery import shared_task

from annotators import snapshots
from annotators.models import CampaignSnapshot


# Late acknowledgement: a broker that redelivers sends the message of a killed worker again; the
# sweep (common.jobs) recovers it on any broker.
@shared_task(name="annotators.snapshot_refresh", acks_late=True, reject_on_worker_lost=True)
def snapshot_refresh_task(snapshot_id: int) -> str:
    """Compute a campaign's figures. A message for a snapshot that no longer exists is dropped."""
    snapshot = CampaignSnapshot.objects.select_related("campaign").filter(pk=snapshot_id).first()
    if snapshot is None:
        return "missing"
    return snapshots.snapshot_run(snapshot=snapshot).status

"""Celery tasks for exports: take an id, load the row, call one service."""

from __future__ import annotations

from celery import shared_task

from exports.models import Export
from exports.services import export_run


# Late acknowledgement: a broker that redelivers (Redis, after its visibility timeout; a prefork
# child that died) sends the message again; the sweep (common.jobs) recovers it on any broker.
# Routed to the `learning` queue (settings.CELERY_TASK_ROUTES).
@shared_task(name="exports.export_run", acks_late=True, reject_on_worker_lost=True)
def export_run_task(export_id: int) -> str:
    """Run one export. A message for an export that no longer exists is dropped."""
    export = Export.objects.select_related("campaign").filter(pk=export_id).first()
    if export is None:
        return "missing"
    export_run(export=export)
    return export.status

"""Celery tasks for exports: take an id, load the row, call one service."""

from __future__ import annotations

from celery import shared_task

from exports.models import Export
from exports.services import export_run


@shared_task(name="exports.export_run")
def export_run_task(export_id: int) -> str:
    """Run one export. A message for an export that no longer exists is dropped."""
    export = Export.objects.select_related("campaign").filter(pk=export_id).first()
    if export is None:
        return "missing"
    export_run(export=export)
    return export.status

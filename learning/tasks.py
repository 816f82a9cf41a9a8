"""Periodic housekeeping of active learning's files (beat)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="learning.media_retention", ignore_result=True)
def media_retention_task() -> dict[str, int]:
    """Apply the checkpoint retention rule to every campaign (``learning.retention``), so that
    disk use is bounded even where nobody runs ``disk_usage --reclaim``."""
    from learning.retention import media_retention

    pruned = media_retention()
    return {"folders": len(pruned.prefixes), "bytes": pruned.bytes}

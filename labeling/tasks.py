"""Celery tasks for the queue: thin wrappers over ``labeling.queue``.

The bulk actions' task comes from their job kind (``labeling.curation.actions.BULK_ACTIONS``).
"""

from __future__ import annotations

from celery import shared_task

from labeling import queue


@shared_task(name="labeling.leases_sweep", ignore_result=True)
def leases_sweep() -> int:
    """Release the slots of every expired lease in every campaign (beat runs this every minute).

    The queue already reclaims before serving; the sweep keeps counts and dashboards current in
    campaigns nobody is asking work from. Idempotent, so a lost or repeated run does no harm.
    """
    return queue.leases_reclaim(campaign=None, limit=None)

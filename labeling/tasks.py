"""Celery tasks for the queue: thin wrappers over ``labeling.queue``."""

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


@shared_task(name="labeling.bulk_action_run")
def bulk_action_run_task(job_id: int) -> str:
    """Run one bulk action of the data browser; a message for a missing job is dropped."""
    from labeling.curation.actions import bulk_action_run
    from labeling.models import SolutionBulkAction

    job = SolutionBulkAction.objects.select_related("campaign", "created_by").filter(pk=job_id)
    job = job.first()
    if job is None:
        return "missing"
    return bulk_action_run(job=job).status

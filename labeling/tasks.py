"""Celery tasks for the queue: thin wrappers over ``labeling.services``."""

from __future__ import annotations

from celery import shared_task

from labeling import services


@shared_task(name="labeling.leases_sweep", ignore_result=True)
def leases_sweep() -> int:
    """Release the slots of every expired lease in every campaign (beat runs this every minute).

    The queue already reclaims before serving; the sweep keeps counts and dashboards current in
    campaigns nobody is asking work from. Idempotent, so a lost or repeated run does no harm.
    """
    return services.leases_reclaim(campaign=None, limit=None)


@shared_task(
    name="labeling.active_learning_run",
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
)
def active_learning_run_task(run_id: int) -> str:
    """Run one active-learning run; a message for a finished or missing run is dropped."""
    from labeling.active_learning import active_learning_run
    from labeling.models import ActiveLearningRun

    run = ActiveLearningRun.objects.select_related("campaign").filter(pk=run_id).first()
    if run is None:
        return "missing"
    return active_learning_run(run=run).status


@shared_task(name="labeling.active_learning_sweep", ignore_result=True)
def active_learning_sweep_task() -> dict:
    """Resend active-learning runs whose message or worker was lost (beat runs this)."""
    from labeling.active_learning import active_learning_sweep

    return active_learning_sweep()

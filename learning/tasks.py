"""Celery tasks of active learning: take an id, load the row, call one service."""

from __future__ import annotations

from celery import shared_task


# Routed to the `learning` queue (settings.CELERY_TASK_ROUTES): a GPU worker takes it.
@shared_task(
    name="learning.active_learning_run",
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
)
def active_learning_run_task(run_id: int) -> str:
    """Run one active-learning run; a message for a finished or missing run is dropped."""
    from learning.active_learning import active_learning_run
    from learning.models import ActiveLearningRun

    run = ActiveLearningRun.objects.select_related("campaign").filter(pk=run_id).first()
    if run is None:
        return "missing"
    return active_learning_run(run=run).status


@shared_task(name="learning.active_learning_sweep", ignore_result=True)
def active_learning_sweep_task() -> dict:
    """Resend active-learning runs whose message or worker was lost.

    Beat runs ``common.jobs_sweep`` now, which sweeps these runs with every other kind of job;
    this task stays for messages (and beat schedules) that still name it.
    """
    from learning.active_learning import active_learning_sweep

    return active_learning_sweep()

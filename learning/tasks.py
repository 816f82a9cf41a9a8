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
    from learning.models import ActiveLearningRun
    from learning.run import active_learning_run

    run = ActiveLearningRun.objects.select_related("campaign").filter(pk=run_id).first()
    if run is None:
        return "missing"
    return active_learning_run(run=run).status

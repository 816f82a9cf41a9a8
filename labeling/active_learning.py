"""Active learning: retrain the PRM on the labels so far and put convincing wrong answers first.

PRM800K's selection rule ("Let's Verify Step by Step", section 4): score every open solution with
the current PRM and show labelers mostly *convincing wrong-answer* solutions (the PRM rates them
highly but their final answer is wrong), plus some of the most convincing others. The queue serves
by ``Solution.priority`` (highest first), so a run rewrites ``priority`` in bulk.

The run is a Celery task (``labeling.tasks.active_learning_run_task``) around
``active_learning_run``; ``active_learning_trigger`` creates the run row, which is also the lock
(see ``ActiveLearningRun``), and enqueues the task on commit.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from labeling.models import ActiveLearningRun, Campaign


def active_learning_trigger(
    *,
    campaign: Campaign,
    requested_by: AbstractBaseUser | None = None,
    trigger: str = ActiveLearningRun.Trigger.MANUAL,
) -> ActiveLearningRun:
    """Queue a run for the campaign, or return the one already queued or running.

    The partial unique constraint makes this safe under concurrency: two triggers at once create one
    run, the loser reads the winner's row. The task is enqueued when the transaction commits, so a
    worker never looks for a row it cannot see yet.
    """
    existing = _active_run(campaign)
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            run = ActiveLearningRun.objects.create(
                campaign=campaign, trigger=trigger, requested_by=requested_by
            )
    except IntegrityError:
        existing = _active_run(campaign)
        if existing is None:  # finished in between: the caller may simply ask again
            raise
        return existing
    _enqueue(run.pk)
    return run


def _active_run(campaign: Campaign) -> ActiveLearningRun | None:
    return (
        ActiveLearningRun.objects.filter(
            campaign=campaign, status__in=ActiveLearningRun.ACTIVE_STATUSES
        )
        .order_by("pk")
        .first()
    )


def _enqueue(run_id: int) -> None:
    from labeling.tasks import active_learning_run_task

    transaction.on_commit(lambda: active_learning_run_task.delay(run_id))


def active_learning_run(*, run: ActiveLearningRun) -> ActiveLearningRun:
    """Export, train, evaluate, register, rescore and reorder; record every stage on the run."""
    raise NotImplementedError

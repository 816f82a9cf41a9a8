"""Recovery: the beat-scheduled sweep that sends again runs whose message or worker was lost.

A run keeps its lock while it is queued or running; the sweep sees a running run's heartbeat go
stale and queues it again, or fails it after ``STEPWISE_AL_MAX_ATTEMPTS`` (which frees the lock).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from learning.models import ActiveLearningRun
from learning.triggers import run_enqueue


def active_learning_sweep(*, stale_seconds: int | None = None) -> dict[str, int]:
    """Send again the runs that lost their message or worker; fail those out of attempts.

    - running with a heartbeat older than the stale bound: the worker died (the embedded broker
      never redelivers; Redis does, but only after its visibility timeout). Back to queued,
      keeping the lock, and sent again; after ``STEPWISE_AL_MAX_ATTEMPTS`` starts it fails with
      an error that says so, which frees the lock;
    - queued and not taken within the stale bound of being sent: the message was lost (or every
      worker was busy that long: a duplicate message is harmless, the claim takes a run once).
    """
    stale_s = settings.STEPWISE_AL_STALE_SECONDS if stale_seconds is None else stale_seconds
    cutoff = timezone.now() - timedelta(seconds=stale_s)
    max_attempts = settings.STEPWISE_AL_MAX_ATTEMPTS
    out = {"requeued": 0, "resent": 0, "failed": 0}
    dead = ActiveLearningRun.objects.filter(
        status=ActiveLearningRun.Status.RUNNING, heartbeat_at__lt=cutoff
    )
    out["failed"] = dead.filter(attempts__gte=max_attempts).update(
        status=ActiveLearningRun.Status.FAILED,
        finished_at=timezone.now(),
        error=f"gave up after {max_attempts} attempts: each time the worker stopped beating the "
        "run's heartbeat (killed, or out of memory) before it finished",
    )
    for run_id in dead.filter(attempts__lt=max_attempts).values_list("pk", flat=True):
        with transaction.atomic():
            # heartbeat_at of a queued run means "sent at": the bound for resending it below.
            taken_back = ActiveLearningRun.objects.filter(
                pk=run_id, status=ActiveLearningRun.Status.RUNNING, heartbeat_at__lt=cutoff
            ).update(status=ActiveLearningRun.Status.QUEUED, heartbeat_at=timezone.now())
            if taken_back:
                out["requeued"] += 1
                run_enqueue(run_id)
    lost = ActiveLearningRun.objects.filter(status=ActiveLearningRun.Status.QUEUED).filter(
        Q(heartbeat_at__isnull=True, created_at__lt=cutoff) | Q(heartbeat_at__lt=cutoff)
    )
    for run_id in lost.values_list("pk", flat=True):
        with transaction.atomic():
            ActiveLearningRun.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
            out["resent"] += 1
            run_enqueue(run_id)
    return out

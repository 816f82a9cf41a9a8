"""Recovering background jobs (``common.jobs``): the one sweep that sends a silent job again or
fails it after its attempts, and the operator's retry and fail.

The sweep (``jobs_sweep``, the beat task ``common.jobs_sweep``) walks every registered kind; a
job's row says whether its worker went silent (``job_is_silent``). ``job_retry`` and ``job_fail``
are the admin's actions (``common/admin.py``) and a person's resume (a generation).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.jobs import FAILED, JobKind, job_kinds

if TYPE_CHECKING:
    from common.models import RecoverableJob

_Job = TypeVar("_Job", bound="RecoverableJob")

log = logging.getLogger(__name__)


def job_retry(
    kind: JobKind[Any],
    pk: int,
    *,
    finished: tuple[str, ...] = (FAILED,),
    running: bool = False,
    send: bool = True,
) -> bool:
    """Start a job again: the one way back to waiting for a worker, outside the sweep.

    An operator's "Retry" (the admin's action) starts a failed job again from scratch, with all
    its attempts: its work starts over as the first attempt's does (an import of the same file
    adds nothing twice). A kind whose work carries on where it stopped (a generation asks only
    for the samples it lacks) lets a person resume it after it ended done, too:
    ``finished=(DONE, FAILED)`` (of the four states). ``running=True`` takes back a running job
    whose worker the caller knows is gone; it keeps its attempt numbers, so the lost worker's
    attempt no longer owns it (``JobAttempt``) and stops at its next write. A job sent again
    has ``heartbeat_at`` now: a waiting job's "sent at", the sweep's bound for a lost message.
    ``send=False``: the caller runs it (``job_run``). False when the job was in none of those
    states (it is left alone, and nothing is sent).
    """
    fields: dict[str, Any] = {"status": kind.queued, "heartbeat_at": timezone.now()}
    if kind.finished_field:
        fields[kind.finished_field] = None
    rows = kind.model.objects.filter(pk=pk)
    with transaction.atomic():
        again = rows.filter(status__in=[kind.status(s) for s in finished]).update(
            attempts=0, error="", started_at=None, **fields
        )
        if not again and running:
            again = rows.filter(status=kind.running).update(**fields)
        if again and send:
            kind.send(pk)
    return bool(again)


def job_fail(kind: JobKind[Any], pk: int, reason: str) -> bool:
    """Fail a waiting or running job now, with ``reason`` (an operator's action: the admin's
    "Fail"). A worker still running it stops at its next write (its attempt no longer owns the
    job). False when the job had already finished."""
    job = kind.model.objects.filter(pk=pk, status__in=(kind.queued, kind.running)).first()
    if job is None:
        return False
    fields: dict[str, Any] = {"status": kind.failed, "error": reason[:5000]}
    if kind.finished_field:
        fields[kind.finished_field] = timezone.now()
    if kind.failed_fields is not None:
        fields |= kind.failed_fields(job, reason)
    return bool(
        kind.model.objects.filter(pk=pk, status__in=(kind.queued, kind.running)).update(**fields)
    )


def job_is_silent(kind: JobKind[_Job], job: _Job) -> bool:
    """Whether a running job's worker went silent (by the sweep's own rule, ``_silent``)."""
    cutoff = timezone.now() - timedelta(seconds=kind.stale_seconds)
    return kind.model.objects.filter(_silent(cutoff), pk=job.pk).exists()


def _silent(cutoff: datetime) -> Q:
    """No heartbeat since ``cutoff`` (or none at all, and started before it)."""
    return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)


# --- The sweep ----------------------------------------------------------------------------------


def jobs_sweep(*, stale_seconds: float | None = None) -> dict[str, dict[str, int]]:
    """Run ``job_kind_sweep`` for every registered kind (the beat task ``common.jobs_sweep``).

    One kind's trouble does not stop the others' recovery, but a sweep that could not sweep
    every kind (the database down) raises ``SweepFailed`` at the end, naming them, so that the
    task is recorded as failed, not as a success that recovered nothing."""
    out = {}
    failed: dict[str, str] = {}
    for kind in job_kinds().values():
        try:
            out[kind.name] = job_kind_sweep(kind, stale_seconds=stale_seconds)
        except Exception as error:  # one kind's trouble must not stop the others' recovery
            log.exception("sweep of %s failed", kind.name)
            failed[kind.name] = f"{type(error).__name__}: {error}"
    if failed:
        first = next(iter(failed.values()))
        raise SweepFailed(
            f"the sweep could not sweep {len(failed)} of {len(job_kinds())} kinds of job "
            f"({', '.join(failed)}): {first}"
        )
    return out


class SweepFailed(RuntimeError):
    """The sweep could not sweep some kinds of job (their jobs wait for the next sweep)."""


def job_kind_sweep(kind: JobKind[Any], *, stale_seconds: float | None = None) -> dict[str, int]:
    """Send again the jobs of one kind that lost their worker or message; fail those out of tries.

    - running with a heartbeat older than the stale bound (or none, from before heartbeats): the
      worker died. The embedded broker never redelivers, Redis only after its visibility timeout.
      Back to waiting and sent again (its own task, so its own queue); after its attempts it
      fails with an error that says so;
    - waiting and not taken within the stale bound of being sent: the message was lost (or every
      worker was busy that long: a duplicate message is harmless, the claim takes a job once);
      one that has no attempts left (a person resumed it after its last one) fails instead.

    Every change is one conditional UPDATE, so a job that came back to life in between is left
    alone.
    """
    stale_s = kind.stale_seconds if stale_seconds is None else stale_seconds
    now = timezone.now()
    cutoff = now - timedelta(seconds=stale_s)
    max_attempts = kind.max_attempts
    objects = kind.model.objects
    silent = _silent(cutoff)
    dead = objects.filter(silent, status=kind.running)
    out = {"requeued": 0, "resent": 0, "failed": 0}
    reason = (
        f"gave up after {max_attempts} attempts: each time the worker stopped beating the job's "
        "heartbeat (killed, or out of memory) before it finished"
    )
    created_before = {f"{kind.created_field}__lt": cutoff}
    lost = Q(status=kind.queued) & (
        Q(heartbeat_at__isnull=True, **created_before) | Q(heartbeat_at__lt=cutoff)
    )
    spent = (Q(silent, status=kind.running) | lost) & Q(attempts__gte=max_attempts)
    for job in objects.filter(spent):
        fields: dict[str, Any] = {"status": kind.failed, "error": reason}
        if kind.finished_field:
            fields[kind.finished_field] = now
        if kind.failed_fields is not None:
            fields |= kind.failed_fields(job, reason)
        out["failed"] += objects.filter(spent, pk=job.pk).update(**fields)
    for pk in dead.filter(attempts__lt=max_attempts).values_list("pk", flat=True):
        with transaction.atomic():
            # heartbeat_at of a waiting job means "sent at": the bound for resending it below.
            taken_back = objects.filter(silent, pk=pk, status=kind.running).update(
                status=kind.queued, heartbeat_at=timezone.now()
            )
            if taken_back:
                out["requeued"] += 1
                kind.send(pk)
    for pk in objects.filter(lost, attempts__lt=max_attempts).values_list("pk", flat=True):
        with transaction.atomic():
            if objects.filter(pk=pk, status=kind.queued).update(heartbeat_at=timezone.now()):
                out["resent"] += 1
                kind.send(pk)
    return out

"""What every background job shares beyond its row (``common.models.BackgroundJob``).

Durable jobs: a job's row is the truth about it, not the broker's message. A worker takes a job
with ``job_claim`` (one conditional UPDATE that counts an attempt), beats its heartbeat with
``job_heartbeat`` and writes its outcome with ``job_update`` (only while its attempt still owns
the job). Every kind of job registers a ``JobKind``; one beat-scheduled sweep (``jobs_sweep``,
the task ``common.jobs_sweep``) sends again a job whose worker went silent, and fails it with a
reason after its attempts. So a job survives a killed worker whichever broker carries it.

``JobBeat`` writes a running job's liveness or progress from a thread with its own database
connection: the job itself works inside one long transaction (an import) or one long call (PRM
training), and whatever it wrote there would only be seen at its end. Import jobs report their
phase and progress with it; active-learning runs beat their heartbeat, which the recovery sweep
reads to tell a live run from one whose worker died.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, connections, models, transaction
from django.db.models import F, Q
from django.utils import timezone

log = logging.getLogger(__name__)


class JobBeat:
    """Calls ``tick()`` every ``every`` seconds from a thread, until stopped.

    The thread has its own connection. On SQLite (one writer at a time) a tick that finds the
    database busy with the job's own transaction is skipped, not waited for; any other error of
    a tick is logged and the next tick tries again. Use it as a context manager, or ``start()``
    and ``stop()``.
    """

    def __init__(self, tick: Callable[[], None], *, every: float, name: str) -> None:
        self.tick = tick
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def __enter__(self) -> JobBeat:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout)

    def _loop(self) -> None:
        try:
            if connection.vendor == "sqlite":
                with connection.cursor() as cursor:
                    cursor.execute("PRAGMA busy_timeout = 0")
            while not self._stop.wait(self.every):
                try:
                    self.tick()
                except OperationalError:
                    pass  # SQLite busy with the job's own transaction: next tick
                except Exception:
                    log.debug("%s: tick failed", self._thread.name, exc_info=True)
        finally:
            connections.close_all()  # this thread's connections only


# --- Durable jobs: claim, heartbeat, sweep ----------------------------------------------------


class JobSuperseded(Exception):
    """This attempt no longer owns its job: the sweep sent it again, and another attempt took it."""


@dataclass(frozen=True)
class JobKind:
    """One kind of job (a model with ``RecoverableJob``'s fields), registered with the sweep.

    The status names are the model's own (active-learning runs say ``queued`` and ``succeeded``
    where the others say ``pending`` and ``done``). ``send`` enqueues the job's task on commit.
    ``stale_setting`` and ``attempts_setting`` name the settings that bound its silence and its
    attempts, read at each use. ``failed_fields`` adds fields to write when the sweep gives up
    (an import shows its reason in ``errors``).
    """

    name: str
    model: type[models.Model]
    send: Callable[[int], None]
    queued: str = "pending"
    running: str = "running"
    failed: str = "failed"
    created_field: str = "created_at"
    finished_field: str | None = "finished_at"
    stale_setting: str = "STEPWISE_JOB_STALE_SECONDS"
    attempts_setting: str = "STEPWISE_JOB_MAX_ATTEMPTS"
    heartbeat_setting: str = "STEPWISE_JOB_HEARTBEAT_SECONDS"
    failed_fields: Callable[[models.Model, str], dict[str, Any]] | None = None

    @property
    def stale_seconds(self) -> float:
        return getattr(settings, self.stale_setting)

    @property
    def max_attempts(self) -> int:
        return getattr(settings, self.attempts_setting)

    @property
    def heartbeat_seconds(self) -> float:
        return getattr(settings, self.heartbeat_setting)


_KINDS: dict[str, JobKind] = {}


def job_kind_register(kind: JobKind) -> JobKind:
    """Have the sweep look after this kind of job (each app registers its kinds when ready)."""
    _KINDS[kind.name] = kind
    return kind


def job_kinds() -> dict[str, JobKind]:
    return dict(_KINDS)


def job_claim(kind: JobKind, pk: int, **fields: Any) -> int | None:
    """Take a job for this worker: its attempt number, or None when it is not this worker's.

    One conditional UPDATE, so two workers (or two copies of one message) never both take it: a
    waiting job is taken, and so is a running one whose heartbeat went silent (the broker
    redelivered the message of a worker that died), within its attempts, and a running one
    without any heartbeat (marked running before heartbeats existed: no claim leaves that).
    ``fields`` are written with the claim.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=kind.stale_seconds)
    taken = (
        kind.model.objects.filter(pk=pk, attempts__lt=kind.max_attempts)
        .filter(
            Q(status=kind.queued)
            | Q(status=kind.running, heartbeat_at__lt=stale)
            | Q(status=kind.running, heartbeat_at__isnull=True)
        )
        .update(
            status=kind.running,
            started_at=now,
            heartbeat_at=now,
            attempts=F("attempts") + 1,
            error="",
            **fields,
        )
    )
    if not taken:
        return None
    return kind.model.objects.values_list("attempts", flat=True).get(pk=pk)


def job_update(kind: JobKind, pk: int, attempt: int, **fields: Any) -> bool:
    """Write ``fields`` to the job only while this attempt owns it; False when it no longer does."""
    return bool(
        kind.model.objects.filter(pk=pk, attempts=attempt, status=kind.running).update(**fields)
    )


def job_heartbeat(kind: JobKind, pk: int, attempt: int) -> JobBeat:
    """A ``JobBeat`` that beats the job's ``heartbeat_at`` while this attempt owns it."""

    def beat() -> None:
        job_update(kind, pk, attempt, heartbeat_at=timezone.now())

    every = max(0.2, float(kind.heartbeat_seconds))
    return JobBeat(beat, every=every, name=f"{kind.name}-{pk}-heartbeat")


def jobs_sweep(*, stale_seconds: float | None = None) -> dict[str, dict[str, int]]:
    """Run ``job_kind_sweep`` for every registered kind (the beat task ``common.jobs_sweep``)."""
    out = {}
    for kind in job_kinds().values():
        try:
            out[kind.name] = job_kind_sweep(kind, stale_seconds=stale_seconds)
        except Exception:  # one kind's trouble must not stop the others' recovery
            log.exception("sweep of %s failed", kind.name)
    return out


def job_kind_sweep(kind: JobKind, *, stale_seconds: float | None = None) -> dict[str, int]:
    """Send again the jobs of one kind that lost their worker or message; fail those out of tries.

    - running with a heartbeat older than the stale bound (or none, from before heartbeats): the
      worker died. The embedded broker never redelivers, Redis only after its visibility timeout.
      Back to waiting and sent again; after its attempts it fails with an error that says so;
    - waiting and not taken within the stale bound of being sent: the message was lost (or every
      worker was busy that long: a duplicate message is harmless, the claim takes a job once).

    Every change is one conditional UPDATE, so a job that came back to life in between is left
    alone.
    """
    stale_s = kind.stale_seconds if stale_seconds is None else stale_seconds
    now = timezone.now()
    cutoff = now - timedelta(seconds=stale_s)
    max_attempts = kind.max_attempts
    objects = kind.model.objects
    silent = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    dead = objects.filter(silent, status=kind.running)
    out = {"requeued": 0, "resent": 0, "failed": 0}
    reason = (
        f"gave up after {max_attempts} attempts: each time the worker stopped beating the job's "
        "heartbeat (killed, or out of memory) before it finished"
    )
    for job in dead.filter(attempts__gte=max_attempts):
        fields: dict[str, Any] = {"status": kind.failed, "error": reason}
        if kind.finished_field:
            fields[kind.finished_field] = now
        if kind.failed_fields is not None:
            fields |= kind.failed_fields(job, reason)
        out["failed"] += objects.filter(silent, pk=job.pk, status=kind.running).update(**fields)
    for pk in dead.filter(attempts__lt=max_attempts).values_list("pk", flat=True):
        with transaction.atomic():
            # heartbeat_at of a waiting job means "sent at": the bound for resending it below.
            taken_back = objects.filter(silent, pk=pk, status=kind.running).update(
                status=kind.queued, heartbeat_at=timezone.now()
            )
            if taken_back:
                out["requeued"] += 1
                kind.send(pk)
    created_before = {f"{kind.created_field}__lt": cutoff}
    lost = objects.filter(status=kind.queued).filter(
        Q(heartbeat_at__isnull=True, **created_before) | Q(heartbeat_at__lt=cutoff)
    )
    for pk in lost.values_list("pk", flat=True):
        with transaction.atomic():
            if objects.filter(pk=pk, status=kind.queued).update(heartbeat_at=timezone.now()):
                out["resent"] += 1
                kind.send(pk)
    return out


def stage_pause(stage: str) -> None:
    """Sleep at a named stage of a job when ``STEPWISE_JOB_PAUSE`` says so (tests only).

    The tests that kill a worker in the middle of a job set it (``{"exports.write": 30}``) to
    hold the job at a known point; the log line tells them the worker got there.
    """
    seconds = settings.STEPWISE_JOB_PAUSE.get(stage)
    if seconds:
        log.warning("job stage %s: pausing %s s (STEPWISE_JOB_PAUSE)", stage, seconds)
        time.sleep(float(seconds))

"""Background jobs: one mechanism for every kind of work a Celery worker does for a page.

A job's row is the truth about it, not the broker's message. Every kind of job (an upload
import, a generation, an export, the dashboard's figures, an active-learning run, a bulk action
of the data browser) is one ``JobKind``, registered with ``job_kind_register`` in its app's
``ready()``; from it come

- its Celery task (named by the kind, ``acks_late`` with ``reject_on_worker_lost``, routed by
  ``CELERY_TASK_ROUTES``), whose body is ``job_run``: load the row, claim it (``job_claim``: one
  conditional UPDATE that counts an attempt), beat its heartbeat from a thread while the kind's
  ``work`` runs, and record a failure with its reason;
- ``kind.send(pk)``, which sends that task once the current transaction commits;
- its place in the one sweep (``common.job_recovery.jobs_sweep``, the beat task
  ``common.jobs_sweep``), which sends
  again a job whose worker went silent, to the same task and so the same queue, and fails it with
  a reason after its attempts;
- its status on every page, through one partial and one view polled every
  ``STEPWISE_JOB_POLL_SECONDS`` (``JobPage``; ``labeling.job_views``).

A job's ``work(job, attempt)`` writes through its ``JobAttempt``: every write is conditional on
this attempt still owning the job (``JobSuperseded`` otherwise), and ``attempt.report(...)``
hands progress to the heartbeat thread, which writes it through its own database connection, so a
page sees it while the job's own transaction or long call is still open.

So a job survives a killed worker whichever broker carries it, runs its effects once, and ends
done or failed with its reason. How to add a kind: docs/architecture.md, "How to add a job kind".
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.conf import settings
from django.db import OperationalError, connection, connections, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from common.logs import log_context

if TYPE_CHECKING:
    from celery import Task

    from common.models import RecoverableJob

log = logging.getLogger(__name__)

# The model of one kind of job (``ImportJob``, ``Export``...).
_Job = TypeVar("_Job", bound="RecoverableJob")

# A job's state as every page says it, whatever its model calls it (``JobKind`` maps them).
PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
FINISHED = (DONE, FAILED)
STATE_WORDS = {PENDING: "waiting for a worker", RUNNING: "running", DONE: "done", FAILED: "failed"}
# How often the heartbeat thread looks for progress to write (it beats the heartbeat itself every
# ``heartbeat_seconds``): often enough for a page polling every second or two, rarely enough that
# a million-row job spends nothing on it.
PROGRESS_EVERY_S = 0.5


class JobBeat:
    """Calls ``tick()`` every ``every`` seconds from a thread, until stopped.

    The thread has its own connection, opened at its first tick (a job that ends sooner opens
    none). On SQLite (one writer at a time) a tick that finds the database busy with the job's
    own transaction is skipped, not waited for; any other error of a tick is logged and the next
    tick tries again. Use it as a context manager, or ``start()`` and ``stop()``.
    """

    def __init__(self, tick: Callable[[], None], *, every: float, name: str) -> None:
        self.tick = tick
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def __enter__(self) -> JobBeat:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout)

    def _loop(self) -> None:
        try:
            first = True
            while not self._stop.wait(self.every):
                if first and connection.vendor == "sqlite":
                    with connection.cursor() as cursor:
                        cursor.execute("PRAGMA busy_timeout = 0")
                first = False
                try:
                    self.tick()
                except OperationalError:
                    pass  # SQLite busy with the job's own transaction: next tick
                except Exception:
                    log.debug("%s: tick failed", self._thread.name, exc_info=True)
        finally:
            connections.close_all()  # this thread's connections only


# --- Kinds --------------------------------------------------------------------------------------


class JobSuperseded(Exception):
    """This attempt no longer owns its job: the sweep sent it again, and another attempt took it."""


@dataclass(frozen=True)
class JobPage:
    """How pages show one kind of job: the one status partial (``labeling/_job.html``) wraps
    ``template``, the kind's own part (its columns or its sentence), in an ``element`` that htmx
    polls every ``STEPWISE_JOB_POLL_SECONDS`` at the one status view until the job has finished.

    ``viewers``: the campaign roles that may see it. ``url``: the name of the page that lists the
    kind's jobs (the status view sends a visitor without htmx there). ``reload_when_done``: the
    job's outcome is the rest of the page (a run's new model, fresh figures), so the page reloads
    when it ends instead of swapping the element. ``follow``: for a kind that recurs (the
    figures), the job the page should show now instead of the one it shows (a newer one, perhaps
    requested just now); the page then keeps polling after the job has finished.
    """

    template: str
    url: str
    viewers: tuple[str, ...]
    element: str = "div"
    css_class: str = ""
    reload_when_done: bool = False
    follow: Callable[[Any], Any] | None = None  # Any: the kind's own model, in and out


@dataclass(frozen=True, eq=False)
class JobKind(Generic[_Job]):
    """One kind of job: a model with ``RecoverableJob``'s fields and a ``status`` and ``campaign``,
    the Celery task that runs it, the function that does its work, and how pages show it.

    ``work(job, attempt, **options)`` does the job: it
    writes through ``attempt`` and ends with ``attempt.finish(...)``; an exception it raises fails
    the job with the exception as its reason (``failed_fields`` adds what else to write: an
    import shows the reason among its errors). ``task`` is the task's name, which
    ``CELERY_TASK_ROUTES`` routes (heavy kinds go to the ``learning`` queue).

    The status names are the model's own (``pending``/``done`` unless it says otherwise: an
    active-learning run says ``queued`` and ``succeeded``); ``state()`` maps them to the four
    states every page shows in the same words. ``stale_setting``, ``attempts_setting`` and
    ``heartbeat_setting`` name the settings that bound its silence, its attempts and its beat,
    read at each use. ``claim_fields`` are written with the claim (a fresh progress).
    """

    name: str
    model: type[_Job]
    task: str
    work: Callable[..., None]
    page: JobPage
    related: tuple[str, ...] = ("campaign",)
    claim_fields: dict[str, Any] = field(default_factory=dict)
    queued: str = PENDING
    running: str = RUNNING
    done: str = DONE
    failed: str = FAILED
    created_field: str = "created_at"
    finished_field: str | None = "finished_at"
    stale_setting: str = "STEPWISE_JOB_STALE_SECONDS"
    attempts_setting: str = "STEPWISE_JOB_MAX_ATTEMPTS"
    heartbeat_setting: str = "STEPWISE_JOB_HEARTBEAT_SECONDS"
    failed_fields: Callable[[_Job, str], dict[str, Any]] | None = None

    @property
    def stale_seconds(self) -> float:
        seconds: float = getattr(settings, self.stale_setting)
        return seconds

    @property
    def max_attempts(self) -> int:
        attempts: int = getattr(settings, self.attempts_setting)
        return attempts

    @property
    def heartbeat_seconds(self) -> float:
        seconds: float = getattr(settings, self.heartbeat_setting)
        return seconds

    @property
    def queue(self) -> str:
        """The Celery queue its task goes to (``CELERY_TASK_ROUTES``)."""
        from common.queues import task_queue

        return task_queue(self.task)

    def status(self, state: str) -> str:
        """The model's name for one of the four states."""
        return {PENDING: self.queued, RUNNING: self.running, DONE: self.done, FAILED: self.failed}[
            state
        ]

    def state(self, job: RecoverableJob) -> str:
        """The job's state in the words of every page: pending, running, done or failed."""
        names = {self.queued: PENDING, self.running: RUNNING, self.done: DONE, self.failed: FAILED}
        return names[job.status]

    def send(self, pk: int) -> None:
        """Send the job's task once the current transaction commits (at once outside one).

        The job is accepted once its row is committed, broker or not: when the broker cannot
        take the message (down, unreachable), the job is left to the sweep, marked as sent long
        enough ago that the sweep's next pass sends it again (``job_unsent``), and the request
        that created it still answers with its id.
        """
        task = job_task(self)

        def deliver() -> None:
            try:
                task.delay(pk)
            except Exception as error:  # the broker's trouble must not undo an accepted job
                log.warning(
                    "%s job %s: the broker did not take its message (%s: %s); "
                    "the jobs sweep sends it when the broker is back",
                    self.name,
                    pk,
                    type(error).__name__,
                    error,
                )
                job_unsent(self, pk)

        transaction.on_commit(deliver)


_KINDS: dict[str, JobKind[Any]] = {}  # Any: each kind has its own model
_TASKS: dict[str, Task[[int], str]] = {}


def job_kind_register(kind: JobKind[_Job]) -> JobKind[_Job]:
    """Make ``kind`` a job: its Celery task, its place in the sweep and on the pages.

    Each app calls it for its kinds in ``AppConfig.ready()``, in every process (web, worker), so
    a worker knows the task before it takes a message.
    """
    from celery import shared_task

    def run_job(job_id: int) -> str:
        job = job_run(kind, job_id)
        return "missing" if job is None else job.status

    run_job.__doc__ = f"Run one {kind.name} job (common.jobs.job_run); its row is its result."
    # Late acknowledgement: a broker that redelivers (Redis, after its visibility timeout; a
    # prefork child that died) sends the message again; the sweep recovers it on any broker.
    _TASKS[kind.name] = shared_task(
        name=kind.task, acks_late=True, reject_on_worker_lost=True, ignore_result=True
    )(run_job)
    _KINDS[kind.name] = kind
    return kind


def job_kinds() -> dict[str, JobKind[Any]]:
    return dict(_KINDS)


def job_kind_of(job: _Job) -> JobKind[_Job]:
    """The registered kind whose model ``job`` is."""
    for kind in _KINDS.values():
        if isinstance(job, kind.model):
            return kind
    raise LookupError(f"{type(job).__name__} is no registered kind of job")


def job_kind_for_model(model: type[_Job]) -> JobKind[_Job]:
    """The registered kind whose model is ``model``."""
    for kind in _KINDS.values():
        if issubclass(model, kind.model):
            return kind
    raise LookupError(f"{model.__name__} is no registered kind of job")


def job_task(kind: JobKind[Any]) -> Task[[int], str]:
    """The Celery task of a registered kind (calling it runs one job here, as a worker would)."""
    return _TASKS[kind.name]


# --- Running a job ------------------------------------------------------------------------------


def job_claim(kind: JobKind[Any], pk: int, **fields: Any) -> int | None:
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
    attempts: int = kind.model.objects.values_list("attempts", flat=True).get(pk=pk)
    return attempts


class JobAttempt:
    """One attempt's hold on its job (``number``: the attempt ``job_claim`` counted).

    The kind's work writes through it, and every write holds only while this attempt owns the
    job: ``update`` and ``finish`` raise ``JobSuperseded`` otherwise, so a worker the sweep gave
    up on (alive after all, but silent) stops at its next write instead of racing the attempt
    that replaced it. Inside a transaction, ``lock()`` makes the rest of it this attempt's alone.
    """

    def __init__(self, kind: JobKind[Any], pk: int, number: int) -> None:
        self.kind, self.pk, self.number = kind, pk, number
        self._reported: dict[str, Any] = {}
        self._written: dict[str, Any] = {}
        self._beat_at = 0.0
        self._lock = threading.Lock()

    def owned(self) -> QuerySet[RecoverableJob]:
        rows: QuerySet[RecoverableJob] = self.kind.model.objects.filter(
            pk=self.pk, attempts=self.number, status=self.kind.running
        )
        return rows

    def update(self, **fields: Any) -> None:
        if not self.owned().update(**fields):
            raise JobSuperseded()

    def lock(self) -> None:
        """Lock the job's row for the rest of the current transaction, if this attempt owns it."""
        if not self.owned().select_for_update().exists():
            raise JobSuperseded()

    def finish(self, state: str, **fields: Any) -> None:
        """End the job ``done`` or ``failed``, writing ``fields`` too (in the caller's
        transaction, if any)."""
        fields["status"] = self.kind.status(state)
        if self.kind.finished_field:
            fields[self.kind.finished_field] = timezone.now()
        self.update(**fields)

    def fail(self, reason: str, job: RecoverableJob | None = None) -> None:
        """End the job ``failed``, saying why (and what the kind adds: ``failed_fields``)."""
        fields: dict[str, Any] = {"error": reason[:5000]}
        if self.kind.failed_fields is not None and job is not None:
            fields |= self.kind.failed_fields(job, reason)
        self.finish(FAILED, **fields)

    def report(self, **fields: Any) -> None:
        """Progress (``progress=0.4``, ``phase="writing"``...) for the heartbeat thread to write.

        Written through the thread's own connection within ``PROGRESS_EVERY_S``, so a page sees
        it while the job's own transaction is still open (it would commit only at its end).
        """
        with self._lock:
            self._reported.update(fields)

    def beat(self) -> None:
        """Write the heartbeat now, with what was reported since the last write (any thread)."""
        with self._lock:
            fields = dict(self._reported)
        self.owned().update(heartbeat_at=timezone.now(), **fields)
        with self._lock:
            self._written = fields
            self._beat_at = time.monotonic()

    def _tick(self) -> None:
        with self._lock:
            changed = self._reported != self._written
            due = time.monotonic() - self._beat_at >= self.kind.heartbeat_seconds
        if changed or due:
            self.beat()

    def heartbeat(self) -> JobBeat:
        """The thread that beats the heartbeat and writes the reported progress while it runs."""
        every = max(0.05, min(PROGRESS_EVERY_S, float(self.kind.heartbeat_seconds)))
        self._beat_at = time.monotonic()  # the claim wrote the first heartbeat
        return JobBeat(self._tick, every=every, name=f"{self.kind.name}-{self.pk}-heartbeat")


def job_run(kind: JobKind[_Job], job: _Job | int, **options: Any) -> _Job | None:
    """Run one job of ``kind`` (a row, or its id) in this process: the body of its Celery task.

    Claims it (a job that is finished, taken by a live worker or out of attempts is returned as
    it is: a repeated message does nothing), then calls the kind's work with the attempt and
    ``options`` while a thread beats the heartbeat. An exception from the work fails the job with
    the exception as its reason, and is raised again (so the task says it failed); an attempt
    that lost the job to another (``JobSuperseded``) just stops. Returns the job as it now is
    (the row given, refreshed), or None when there is no such job (a message for a deleted one).
    """
    pk = job if isinstance(job, int) else job.pk
    number = job_claim(kind, pk, **kind.claim_fields)
    row: _Job | None
    if isinstance(job, int):
        row = kind.model.objects.select_related(*kind.related).filter(pk=pk).first()
    else:
        row = job
        try:
            row.refresh_from_db()
        except kind.model.DoesNotExist:
            row = None
    if row is None or number is None:
        return row
    attempt = JobAttempt(kind, pk, number)
    work = kind.work
    campaign = getattr(row, "campaign_id", None)
    with log_context(job_kind=kind.name, job_id=pk, campaign=campaign), attempt.heartbeat():
        try:
            work(row, attempt, **options)
        except JobSuperseded:
            log.warning("%s job %s: a later attempt took it over", kind.name, pk)
        except Exception as error:
            log.exception("%s job %s failed", kind.name, pk)
            with contextlib.suppress(JobSuperseded):
                attempt.fail(job_error_reason(error), row)
            raise
    row.refresh_from_db()
    return row


def job_state_text(job: RecoverableJob) -> str:
    """The job's state as the API says it: a page's word, and for a waiting job the queue it
    waits on (``waiting for a worker on queue long``), saying so when no worker consumes that
    queue (``common.queues``; when the broker cannot be asked, only the queue is named)."""
    kind = job_kind_of(job)
    state = kind.state(job)
    if state != PENDING:
        return STATE_WORDS[state]
    queue = kind.queue
    text = f"{STATE_WORDS[state]} on queue {queue}"
    try:
        from common.queues import queue_consumers

        unconsumed = queue_consumers().unconsumed(queue)
    except Exception:  # the cache or broker is down: the queue's name is still worth saying
        log.warning("job %s: could not ask who consumes %s", job.pk, queue, exc_info=True)
        unconsumed = False
    return f"{text} (no worker consumes it: start one with -Q {queue})" if unconsumed else text


def job_error_reason(error: BaseException) -> str:
    """What a failed job's page says about ``error``: its type and message, without the server's
    paths (a file error names the path it could not use; the worker's log keeps it whole)."""
    if isinstance(error, OSError) and (error.filename or error.filename2):
        what = error.strerror or "file error"
        return (
            f"{type(error).__name__}: {what} (the file storage could not be used; "
            "the worker's log names the file)"
        )
    text = str(error)
    for root in (settings.MEDIA_ROOT, settings.VAR_DIR, settings.BASE_DIR):
        if root:
            text = text.replace(str(root), "…")
    return f"{type(error).__name__}: {text}"


def job_unsent(kind: JobKind[Any], pk: int) -> None:
    """A waiting job whose message never reached the broker: make it due for the sweep's next
    pass. A waiting job's ``heartbeat_at`` means "sent at" (``job_kind_sweep``), so one older
    than the stale bound is sent again, like a lost message."""
    long_ago = timezone.now() - timedelta(seconds=kind.stale_seconds + 1)
    try:
        kind.model.objects.filter(pk=pk, status=kind.queued).update(heartbeat_at=long_ago)
    except Exception:  # the row is still waiting: the sweep sends it at the stale bound anyway
        log.warning("%s job %s: could not mark it unsent", kind.name, pk, exc_info=True)


def stage_pause(stage: str) -> None:
    """Sleep at a named stage of a job when ``STEPWISE_JOB_PAUSE`` says so (tests only).

    The tests that kill a worker in the middle of a job set it (``{"exports.write": 30}``) to
    hold the job at a known point; the log line tells them the worker got there.
    """
    seconds = settings.STEPWISE_JOB_PAUSE.get(stage)
    if seconds:
        log.warning("job stage %s: pausing %s s (STEPWISE_JOB_PAUSE)", stage, seconds)
        time.sleep(float(seconds))

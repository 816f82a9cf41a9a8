"""What every app shares and no domain owns: the background job's state, times and liveness."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone


class RecoverableJob(models.Model):
    """What a job needs to outlive the worker that runs it (see ``common.jobs``: every kind of job's
    model has these fields).

    A worker claims the job with one conditional UPDATE that counts an attempt, then beats
    ``heartbeat_at`` from a thread while it works. The sweep sends again a job whose heartbeat
    went silent (its worker was killed), and fails it with ``error`` after its attempts. While
    a job waits for a worker, ``heartbeat_at`` is when its task was last sent (null: at creation).
    """

    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)

    if TYPE_CHECKING:
        # What ``common.jobs`` reads of every concrete job model, for the type checker only: an
        # abstract model has no manager or DoesNotExist of its own, and each kind's model
        # declares its own ``status`` field with its own choices (``JobKind`` maps them).
        from django.core.exceptions import ObjectDoesNotExist

        # Any: the mechanism's lookups name fields of each kind's model (``status``,
        # ``started_at``) that the abstract one lacks, so the plugin cannot check them here.
        objects: ClassVar[models.Manager[Any]]
        DoesNotExist: ClassVar[type[ObjectDoesNotExist]]
        status: str

    class Meta:
        abstract = True


class BackgroundJob(RecoverableJob):
    """What every job a Celery worker runs for a page has: its state and when it ran.

    A job is created ``pending``, claimed ``running`` by one worker, and ends ``done`` or
    ``failed``; pages poll it until it is finished. A worker that dies leaves it ``running``
    until the sweep sends it again (back to ``pending``) or gives up on it (``failed``, with
    ``error`` saying why).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.DONE, self.Status.FAILED}


class IdempotentRequest(models.Model):
    """A job-creating API request sent with an ``Idempotency-Key``: the job it created, so that
    the same request sent again (a client that lost the answer, a retry after a timeout) gets
    that job back instead of a second one (``common.api.idempotent_job``). Keys are per user and
    per endpoint (``scope``)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=100)
    key = models.CharField(max_length=100)
    job_kind = models.CharField(max_length=50, blank=True)
    job_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "scope", "key"], name="idempotent_request_unique_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.key} -> {self.job_kind} {self.job_id}"

"""What every app shares and no domain owns: the background job's state and times."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class BackgroundJob(models.Model):
    """What every job a Celery worker runs for a page has: its state and when it ran.

    A job is created ``pending``, claimed ``running`` by one worker, and ends ``done`` or
    ``failed``; pages poll it until it is finished.
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

"""People and quality: the figures about a campaign's annotators, and their API keys.

(A person's role in a campaign, ``Membership``, and the ``Invitation`` that granted it live in
``labeling``: the queue locks the membership on every claim.)

- ``CampaignSnapshot``: the dashboard's and the agreement page's figures, computed by a Celery
  task and stored with their time (at a million labels they take seconds, not milliseconds).
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from common.models import RecoverableJob
from labeling.models import Campaign


class SnapshotManager(models.Manager):
    """Snapshots without ``quality`` (every annotator's blocks, the largest part): the pages
    that poll a snapshot or read its figures never load it; ``snapshot_quality`` reads one
    annotator's part."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().defer("quality")


class CampaignSnapshot(RecoverableJob):
    """The campaign's quality and progress figures at one moment (see ``annotators.stats``).

    Pages read the newest ``done`` snapshot and show its time; when it is older than
    ``STEPWISE_SNAPSHOT_MAX_AGE`` a refresh is requested (one at a time) and a Celery worker
    computes the next one. ``data`` is plain JSON, so any page renders it without querying labels.
    A durable job (``common.jobs``): a worker killed mid-computation leaves it to the sweep.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="snapshots")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    requested_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="How long the computation took.")
    data = models.JSONField(default=dict, blank=True)
    # Quality over time, every block of every annotator (``annotators.quality``), by ``u<user
    # id>``; ``data`` keeps each annotator's series and trends, all that lists draw.
    quality = models.JSONField(default=dict, blank=True)

    objects: ClassVar[SnapshotManager] = SnapshotManager()

    class Meta:
        ordering = ["-requested_at", "-id"]
        indexes = [
            models.Index(fields=["campaign", "status", "-computed_at"], name="snapshot_latest"),
        ]

    def __str__(self) -> str:
        return f"snapshot {self.pk} of {self.campaign} ({self.status})"


class ApiToken(models.Model):
    """A named API key of one user, for scripts (``Authorization: Token <key>``).

    Only the key's sha256 is stored: the key itself is shown once, when it is created, so a copy
    of the database gives nobody access. A user may hold several (one per script or machine) and
    revoke each alone; a revoked key is refused but its row stays, with its last use, for audit.
    """

    # Keys start with this, so a leaked one is recognisable (secret scanners, logs).
    PREFIX = "sw_"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the key is for.")
    key_hash = models.CharField(max_length=64, unique=True)
    key_hint = models.CharField(max_length=12, help_text="The key's first characters.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"token {self.name!r} of {self.user_id} ({self.key_hint}…)"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

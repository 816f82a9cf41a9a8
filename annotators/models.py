"""People in campaigns and the manager's tools: roles, invitations, uploads, quality snapshots.

- ``Membership``: a person's role in one campaign, their state and their screening outcome.
- ``Invitation``: a link with a token that lets whoever holds it join a campaign with a role.
- ``ImportJob``: a file a manager uploaded, imported in the background by a Celery worker.
- ``CampaignSnapshot``: the dashboard's and the agreement page's figures, computed by a Celery
  task and stored with their time (at a million labels they take seconds, not milliseconds).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.conf import settings
from django.db import models
from django.utils import timezone

from labeling.models import BackgroundJob, Campaign


class Membership(models.Model):
    """A person's role in one campaign. The same person may hold different roles elsewhere.

    ``screening`` records where an annotator stands with the campaign's screening gate.
    """

    class Role(models.TextChoices):
        MANAGER = "manager", "manager"
        REVIEWER = "reviewer", "reviewer"
        ANNOTATOR = "annotator", "annotator"

    class Status(models.TextChoices):
        ACTIVE = "active", "active"
        PAUSED = "paused", "paused"
        REMOVED = "removed", "removed"

    class Screening(models.TextChoices):
        PENDING = "pending", "pending"
        PASSED = "passed", "passed"
        FAILED = "failed", "failed"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.ANNOTATOR)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    screening = models.CharField(
        max_length=10, choices=Screening.choices, default=Screening.PENDING
    )
    screening_score = models.FloatField(null=True, blank=True)
    joined_at = models.DateTimeField(default=timezone.now)
    invitation = models.ForeignKey(
        "Invitation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memberships",
        help_text="The link they joined with, if any.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "campaign"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.campaign}"

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE


class Invitation(models.Model):
    """A link that lets whoever holds it join ``campaign`` as ``role``, up to ``max_uses`` times.

    Only a hash of the token is stored, like a password: the link is shown once, when it is
    created, so a leaked database or a manager's screen later on does not hand out access.
    ``token_hint`` (the token's first characters) tells links apart in the list.
    """

    class State(models.TextChoices):
        ACTIVE = "active", "active"
        EXPIRED = "expired", "expired"
        USED_UP = "used_up", "used up"
        REVOKED = "revoked", "revoked"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(
        max_length=10, choices=Membership.Role.choices, default=Membership.Role.ANNOTATOR
    )
    token_hash = models.CharField(max_length=64, unique=True)
    token_hint = models.CharField(max_length=8)
    note = models.CharField(max_length=200, blank=True, help_text="Who it is for, for the list.")
    max_uses = models.PositiveIntegerField(default=1, help_text="1: single use.")
    uses = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invitation {self.token_hint}… to {self.campaign} as {self.role}"

    @staticmethod
    def hash_token(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def state(self, now=None) -> str:
        """Why the link works or not; a revoked link says so even once it has expired."""
        now = now or timezone.now()
        if self.revoked_at is not None:
            return self.State.REVOKED
        if self.uses >= self.max_uses:
            return self.State.USED_UP
        if self.expires_at <= now:
            return self.State.EXPIRED
        return self.State.ACTIVE

    @property
    def is_usable(self) -> bool:
        return self.state() == self.State.ACTIVE


class ImportJob(BackgroundJob):
    """One uploaded file, imported by a Celery worker with ``exports.importers.import_file``.

    The import is all or nothing: a job ends ``done`` with its counts, or ``failed`` with the
    importer's errors (file, line, field, message) and nothing written. While it runs, ``phase``
    (validating, writing, grading) and ``progress`` (share of the file read in that phase) are
    updated from a separate connection, so the page can show them before the import commits.
    The uploaded file is deleted once the job has finished; its size and sha256 stay here.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="import_jobs")
    file_name = models.CharField(max_length=255, help_text="The name it was uploaded with.")
    stored_path = models.CharField(max_length=500, blank=True, help_text="Under MEDIA_ROOT.")
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    format = models.CharField(max_length=30)
    options = models.JSONField(default=dict, blank=True)
    grade = models.BooleanField(default=True, help_text="Grade new answers after the import.")
    phase = models.CharField(max_length=20, blank=True)
    progress = models.FloatField(default=0.0)
    counts = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True, help_text="[{file, line, field, message}]")
    errors_truncated = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"import {self.pk} of {self.file_name} into {self.campaign} ({self.status})"

    @property
    def path(self) -> Path:
        return Path(settings.MEDIA_ROOT) / self.stored_path


class CampaignSnapshot(models.Model):
    """The campaign's quality and progress figures at one moment (see ``annotators.stats``).

    Pages read the newest ``done`` snapshot and show its time; when it is older than
    ``STEPWISE_SNAPSHOT_MAX_AGE`` a refresh is requested (one at a time) and a Celery worker
    computes the next one. ``data`` is plain JSON, so any page renders it without querying labels.
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
    error = models.TextField(blank=True)

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

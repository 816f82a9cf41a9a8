"""People in campaigns: roles, membership state and screening outcome."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from labeling.models import Campaign


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

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "campaign"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.campaign}"

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

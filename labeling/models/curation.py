"""What managers do to solutions from the data browser: events for its history, bulk actions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from common.models import BackgroundJob
from labeling.models.campaigns import Campaign
from labeling.models.solutions import Solution, Step


class SolutionEvent(models.Model):
    """Something a manager did to a solution from the data browser, for its history.

    What the queue and the annotators did (served, skipped, submitted) is already in
    ``Assignment`` and ``Review`` rows; these rows record the curation that leaves no other
    trace: requeued, archived, restored, made gold, ground truth edited, graded again under a new
    grading rule.
    """

    class Action(models.TextChoices):
        REQUEUED = "requeued", "requeued"
        ARCHIVED = "archived", "archived"
        RESTORED = "restored", "restored"
        MADE_GOLD = "made_gold", "made gold"
        GROUND_TRUTH = "ground_truth", "ground truth edited"
        SENT_TO_ADJUDICATION = "sent_to_adjudication", "sent to adjudication"
        SENT_TO_REVIEW = "sent_to_review", "sent for review"
        REGRADED = "regraded", "answer graded again"

    solution = models.ForeignKey(Solution, on_delete=models.CASCADE, related_name="events")
    action = models.CharField(max_length=20, choices=Action.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["solution", "created_at", "id"]
        indexes = [
            models.Index(fields=["solution", "created_at"], name="solutionevent_by_solution")
        ]

    def __str__(self) -> str:
        return f"{self.action} solution {self.solution_id}"


class SolutionBulkAction(BackgroundJob):
    """One action applied to many solutions at once (requeue, archive, restore, make gold from
    the consensus, grade the answers again under the campaign's grading rule), as a job.

    ``selection`` is what was chosen in the data browser: the filter's query parameters
    (``labeling.curation.filters``), which may name ids. The solutions it matched are resolved
    when the job runs, and the action is applied to all of them in one transaction: all or nothing.
    ``progress`` (0..1) is written from a separate connection while the transaction is open.
    """

    class Action(models.TextChoices):
        REQUEUE = "requeue", "requeue for more labels"
        ARCHIVE = "archive", "archive"
        RESTORE = "restore", "restore"
        GOLD_QC = "gold_qc", "make QC gold from the consensus"
        GOLD_SCREENING = "gold_screening", "make screening gold from the consensus"
        ADJUDICATE = "adjudicate", "send to adjudication"
        REVIEW = "review", "send for review"
        REGRADE = "regrade", "grade the final answers again"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="bulk_actions")
    action = models.CharField(max_length=20, choices=Action.choices)
    selection = models.JSONField(default=dict, blank=True, help_text="Filter query parameters.")
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    progress = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return f"bulk {self.action} in {self.campaign} ({self.status})"


class AdjudicationRequest(models.Model):
    """A manager sent a step to the adjudication queue (a bulk action from the data browser),
    whether or not annotators disagree on it: machine evidence may contradict them all.

    The queue lists it beside the disputed steps until a reviewer decides it
    (``annotators.review.selectors.adjudication_queue``); sending it again renews the request.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    solution = models.ForeignKey(
        Solution, on_delete=models.CASCADE, related_name="adjudication_requests"
    )
    step = models.OneToOneField(Step, on_delete=models.CASCADE, related_name="adjudication_request")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["campaign", "solution"], name="adjrequest_by_solution")]

    def __str__(self) -> str:
        return f"adjudicate step {self.step_id}"


class ReviewRequest(models.Model):
    """A manager sent a solution's submissions for review (a bulk action from the data browser).

    The review queue's "sent for review" lists the solution's submitted work that no reviewer has
    reviewed since ``requested_at`` (``annotators.review.selectors.review_queue``): work already
    accepted comes back for another look. Sending it again renews the request.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    solution = models.OneToOneField(
        Solution, on_delete=models.CASCADE, related_name="review_request"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["campaign", "requested_at"], name="reviewrequest_by_time")]

    def __str__(self) -> str:
        return f"review solution {self.solution_id}"

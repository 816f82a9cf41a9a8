"""The work on solutions: assignments, their step labels, reviews and adjudications."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Count, Exists, F, Max, Min, OuterRef, Q
from django.utils import timezone

from labeling.models.campaigns import Campaign, FinishReason, Rating
from labeling.models.solutions import Solution, Step
from labeling.prm800k_steps import completions_join


class AssignmentQuerySet(models.QuerySet):
    def live_leases(self, now: datetime | None = None) -> AssignmentQuerySet:
        """Assignments whose lease is live now (``Assignment.live_lease_q``)."""
        return self.filter(Assignment.live_lease_q(now))

    def expired_leases(self, now: datetime | None = None) -> AssignmentQuerySet:
        """Leases whose expiry has passed and that still hold their slot: what the queue
        reclaims (``Assignment.expired_lease_q``)."""
        return self.filter(Assignment.expired_lease_q(now))


class Assignment(models.Model):
    """One annotator labelling one solution (a PRM800K label line once submitted).

    Life cycle (see ``labeling.queue``): ``leased`` holds a slot of the solution; the lease is
    live until ``lease_expires_at``, and an expired lease keeps its slot until the queue reclaims
    it (status ``expired``, slot released, drafts kept). ``skipped`` holds no slot and the solution
    is never served to that annotator again. ``submitted`` holds its slot for good, except with
    finish reason ``give_up`` or ``bad_problem``: those keep the labels but release the slot, so
    another annotator labels the solution in full.

    Nothing a person did is deleted. ``rejected``: submitted work a reviewer rejected; its labels
    and the review's comment stay, it holds no slot, so the solution is labelled again
    (``labeling.queue.assignment_review_outcome``). ``superseded``: an earlier version of work its
    annotator amended before review; the new version is another row whose ``supersedes`` points
    here, and this one keeps its labels and holds no slot (``labeling.queue.assignment_amend``).
    Exports take ``submitted`` rows (the latest version) and, by policy options, the others.
    """

    RELEASING_REASONS = ("give_up", "bad_problem")

    class Status(models.TextChoices):
        LEASED = "leased", "leased"
        SUBMITTED = "submitted", "submitted"
        SKIPPED = "skipped", "skipped"
        EXPIRED = "expired", "expired"
        REJECTED = "rejected", "rejected"
        SUPERSEDED = "superseded", "superseded"

    # Work its annotator finished, latest version: what the figures (work, QC and inter-annotator
    # agreement, screening) count. Rejected work was done; only the exports and the
    # disagreements a reviewer decides leave it out.
    DONE_STATUSES = (Status.SUBMITTED, Status.REJECTED)

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments")
    solution = models.ForeignKey(Solution, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.LEASED)
    leased_at = models.DateTimeField(default=timezone.now)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True, help_text="PRM800K timestamp")
    finish_reason = models.CharField(max_length=12, choices=FinishReason.choices, blank=True)
    total_time_ms = models.PositiveIntegerField(null=True, blank=True)
    submission_key = models.CharField(max_length=64, null=True, blank=True)
    source = models.CharField(max_length=40, blank=True, help_text="Import format, if imported")
    # The annotator's rating of the trajectory's final outcome (campaigns whose kind
    # ``rates_outcome``; AgentProcessBench's ``final_label``): null where none was asked or given.
    outcome_rating = models.SmallIntegerField(choices=Rating.choices, null=True, blank=True)
    supersedes = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="superseded_by",
        help_text="The earlier version this amendment replaces (kept, status superseded).",
    )

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "submission_key"], name="assignment_unique_submission_key"
            ),
        ]
        indexes = [
            models.Index(
                fields=["campaign", "annotator", "status"], name="assignment_by_annotator"
            ),
            models.Index(fields=["solution", "status"], name="assignment_by_solution"),
            models.Index(fields=["campaign", "submitted_at"], name="assignment_by_time"),
            # The queue's reclaim of expired leases reads only leased rows, oldest lease first.
            models.Index(
                fields=["campaign", "lease_expires_at"],
                name="assignment_leases",
                condition=Q(status="leased"),
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"

    # --- Leases: the one home of "this assignment's lease is live" --------------------------
    #
    # A lease is live while the assignment is ``leased`` and its expiry is still ahead. A missing
    # expiry is not live: nothing in the queue writes a lease without one (every claim sets it),
    # and a row that lacks it (written around the queue) must not keep a solution "leased" for
    # ever. ``live_lease_q`` is the rule for querysets, ``lease_is_live`` for a loaded row and
    # ``live_lease_sql`` for the raw statements of the queue's hot path;
    # tests/test_rules_leases.py holds the three to the same rows.

    @classmethod
    def live_lease_q(cls, now: datetime | None = None) -> Q:
        """Assignments whose lease is live at ``now``."""
        now = now or timezone.now()
        return Q(status=cls.Status.LEASED, lease_expires_at__gt=now)

    @classmethod
    def expired_lease_q(cls, now: datetime | None = None) -> Q:
        """Leases past their expiry that still hold their slot (status ``leased``): what
        ``leases_reclaim`` and ``refresh_queue_state`` release. It reads the partial index
        ``assignment_leases`` by expiry, which is why a lease without an expiry (not live,
        never written by the queue) is not in it either."""
        now = now or timezone.now()
        return Q(status=cls.Status.LEASED, lease_expires_at__lte=now)

    @classmethod
    def live_lease_sql(cls, alias: str = "") -> str:
        """``live_lease_q`` as a SQL condition for raw statements; one ``%s``: now."""
        a = f"{alias}." if alias else ""
        return f"{a}status = '{cls.Status.LEASED.value}' AND {a}lease_expires_at > %s"

    def lease_is_live(self, now: datetime | None = None) -> bool:
        """``live_lease_q`` for this row as loaded."""
        now = now or timezone.now()
        return (
            self.status == self.Status.LEASED
            and self.lease_expires_at is not None
            and self.lease_expires_at > now
        )

    @classmethod
    def holds_slot_q(cls) -> Q:
        """Assignments that hold a slot of their solution (what ``assignment_count`` counts)."""
        return Q(status=cls.Status.LEASED) | (
            Q(status=cls.Status.SUBMITTED) & ~Q(finish_reason__in=cls.RELEASING_REASONS)
        )

    @property
    def holds_slot(self) -> bool:
        return self.status == self.Status.LEASED or (
            self.status == self.Status.SUBMITTED
            and self.finish_reason not in self.RELEASING_REASONS
        )


class StepLabelQuerySet(models.QuerySet):
    """The one home of "annotators disagree on this step".

    Annotators disagree on a step when two submitted labels of it carry different ratings.
    Submitted: the current version of finished work (not rejected, not superseded); drafts of a
    live lease are nobody's final word yet. Unrated labels (a step after the first error) say
    nothing. The rule has three spellings, for three shapes of query: ``disputed`` (the labels,
    for an ``Exists``), ``disputed_steps`` (one row per step, for a GROUP BY) and
    ``disputed_step_count`` (raw SQL per solution, for a sort); ``ratings_disagree`` is its Python
    form. tests/test_rules_disagreement.py holds the four to the same steps.
    """

    def submitted(self) -> StepLabelQuerySet:
        """Labels of submitted work: what the figures, the filters and the rule read."""
        return self.filter(StepLabel.submitted_q())

    def submitted_rated(self) -> StepLabelQuerySet:
        """Rated labels of submitted work: the ratings that count (what a model trains on, the
        trigger counts and agreement compares); a step after the first error has none."""
        return self.filter(StepLabel.submitted_q(rated=True))

    def contradicted(self) -> StepLabelQuerySet:
        """Rated labels that a submitted label of another assignment rates differently (the
        label itself may be of any status: a reviewer compares rejected work with the rest)."""
        others = (
            StepLabel.objects.submitted_rated()
            .filter(step_id=OuterRef("step_id"))
            .exclude(assignment_id=OuterRef("assignment_id"))
            .exclude(rating=OuterRef("rating"))
        )
        return self.filter(rating__isnull=False).filter(Exists(others))

    def disputed(self) -> StepLabelQuerySet:
        """Submitted labels of the steps annotators disagree on (each such step has two or more)."""
        return self.submitted().contradicted()

    def disputed_steps(self) -> models.QuerySet:
        """One row per step annotators disagree on: ``step_id``, ``n`` (submitted ratings) and
        ``low`` / ``high`` (the extreme ratings); a GROUP BY over these labels."""
        return (
            self.submitted_rated()
            .order_by()
            .values("step_id")
            .annotate(n=Count("id"), low=Min("rating"), high=Max("rating"))
            .filter(n__gte=2, low__lt=F("high"))
        )


def ratings_disagree(ratings: Iterable[int | None]) -> bool:
    """The rule for the submitted ratings of one step, already loaded: two differ."""
    return len({r for r in ratings if r is not None}) > 1


class StepLabel(models.Model):
    """An annotator's judgement of one step of the solution (one ``label.steps[i]`` of PRM800K).

    ``rating`` and ``flagged`` belong to the solution's own step. PRM800K also records other
    candidate completions rated at the same position (phase 1 always, phase 2 after the first
    error): they are kept in order in ``alternatives`` with the step's own completion at
    ``completion_index`` among them (null when the step is the labeler's own text). A negative step
    may carry a human-written correction in ``human_completion`` (PRM800K's object: text, rating,
    source, flagged).
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="labels")
    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="labels")
    rating = models.SmallIntegerField(choices=Rating.choices, null=True, blank=True)
    flagged = models.BooleanField(null=True, blank=True)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    completion_index = models.PositiveSmallIntegerField(null=True, blank=True, default=0)
    alternatives = models.JSONField(default=list, blank=True)
    human_completion = models.JSONField(null=True, blank=True)
    chosen_completion = models.SmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = StepLabelQuerySet.as_manager()

    class Meta:
        ordering = ["assignment", "step__index"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "step"], name="steplabel_unique_step")
        ]
        # The data browser's "has a negative / flagged step" filters (labeling.curation.filters):
        # small partial indexes, so a count over the campaign reads the few rows that qualify.
        indexes = [
            models.Index(fields=["assignment"], name="steplabel_negative", condition=Q(rating=-1)),
            models.Index(
                fields=["assignment"], name="steplabel_flagged", condition=Q(flagged=True)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rating} on step {self.step_id}"

    @classmethod
    def submitted_q(cls, *, through: str = "", rated: bool = False) -> Q:
        """The labels of submitted work (``rated``: with a rating) as a condition, for a query
        that reaches the labels through a relation (``through="labels__"`` from a step, as
        in a filtered ``Count``); ``StepLabelQuerySet.submitted`` and ``submitted_rated`` are
        this on the labels themselves. Submitted: the current version of finished work (not
        rejected, superseded or skipped, nor a live lease's drafts)."""
        q = Q(**{f"{through}assignment__status": Assignment.Status.SUBMITTED})
        if rated:
            q &= Q(**{f"{through}rating__isnull": False})
        return q

    def completions(self, step_text: str) -> list[dict]:
        """PRM800K's ``completions`` list: the alternatives with the step's own one in place."""
        own = {"text": step_text, "rating": self.rating, "flagged": self.flagged}
        return completions_join(self.alternatives, self.completion_index, own)


class Review(models.Model):
    """A reviewer's decision on a submitted assignment; ``corrections``: step index -> rating."""

    class Decision(models.TextChoices):
        ACCEPTED = "accepted", "accepted"
        REJECTED = "rejected", "rejected"

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="review")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviews"
    )
    decision = models.CharField(max_length=10, choices=Decision.choices)
    comment = models.TextField(blank=True)
    corrections = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.decision} assignment {self.assignment_id}"


class Adjudication(models.Model):
    """A reviewer's final rating of a step on which annotators disagree.

    One current decision per step; a later decision replaces it (``replaced_at`` set on the old
    row, which is kept for audit). The annotators' own labels are never changed: agreement is
    computed on them, and exports use the decision only with the ``adjudicated`` policy.
    """

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="adjudications")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="adjudications")
    rating = models.SmallIntegerField(choices=Rating.choices)
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="adjudications"
    )
    decided_at = models.DateTimeField(default=timezone.now)
    replaced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["step", "-decided_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["step"],
                condition=Q(replaced_at__isnull=True),
                name="adjudication_unique_current",
            )
        ]

    def __str__(self) -> str:
        return f"{self.rating} decided on step {self.step_id}"

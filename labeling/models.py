"""The labelling domain: campaigns, problems, solutions split into steps, and the labels on them.

Names follow PRM800K where it has them. A PRM800K label line maps onto these tables as follows:

- ``question.problem`` / ``ground_truth_answer`` / ``ground_truth_solution`` -> ``Problem``;
- ``question.pre_generated_steps`` / ``pre_generated_answer`` / ``pre_generated_verifier_score``
  and the line's ``generation`` -> ``Solution`` with its ``Step`` rows (phase 2). Phase 1 lines
  have no pre-generated steps: the steps of their solution are the path the labeler built (at each
  position the chosen completion, else the human completion, else the first candidate);
- ``labeler``, ``timestamp``, ``label.total_time``, ``label.finish_reason`` -> ``Assignment``;
- each ``label.steps[i]`` -> one ``StepLabel``: the rating and flag of the completion that is the
  solution's step ``i``, the other candidates (``alternatives``) and where the step's own completion
  sits among them (``completion_index``), ``human_completion`` and ``chosen_completion``.

That mapping is lossless: ``exports`` rebuilds every line field for field.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone


class Rating(models.IntegerChoices):
    NEGATIVE = -1, "negative"
    NEUTRAL = 0, "neutral"
    POSITIVE = 1, "positive"


class FinishReason(models.TextChoices):
    """PRM800K's ``label.finish_reason`` values."""

    FOUND_ERROR = "found_error", "found an error"
    SOLUTION = "solution", "reached the end of the solution"
    BAD_PROBLEM = "bad_problem", "bad problem"
    GIVE_UP = "give_up", "gave up"


class Campaign(models.Model):
    """A labelling project: its solutions, who labels them, and how.

    Settings here drive the queue (overlap, lease, screening, quality control), the labelling page
    (stop at first error) and active learning.
    """

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    instructions = models.TextField(blank=True, help_text="Markdown, shown to annotators.")
    overlap = models.PositiveSmallIntegerField(
        default=1, help_text="How many annotators label each solution."
    )
    lease_seconds = models.PositiveIntegerField(
        default=1800, help_text="How long a served solution stays reserved for its annotator."
    )
    stop_at_first_error = models.BooleanField(
        default=True, help_text="A negative rating ends the solution (PRM800K phase 2)."
    )
    qc_rate = models.FloatField(
        default=0.0, help_text="Share of served solutions that are quality-control questions."
    )
    requires_screening = models.BooleanField(
        default=False, help_text="New annotators label the screening solutions first."
    )
    screening_threshold = models.FloatField(
        default=0.75, help_text="Step agreement with gold ratings needed to pass screening."
    )
    bad_problem_limit = models.PositiveSmallIntegerField(
        default=2,
        help_text="Reports of a bad problem that take a solution out of the queue.",
    )
    active_learning = models.BooleanField(default=False)
    al_wrong_answer_share = models.FloatField(
        default=0.8, help_text="Share of the queue head given to convincing wrong-answer solutions."
    )
    al_retrain_every = models.PositiveIntegerField(
        default=500, help_text="Retrain the PRM after this many new submitted step labels."
    )
    al_backbone = models.CharField(max_length=100, default="bow")

    class Strategy(models.TextChoices):
        """How active learning orders the queue (``learning.strategies``; measured against
        uniform sampling in docs/active-learning.md, whose best is the default)."""

        CONVINCING_WRONG = "convincing-wrong", "convincing wrong answers (PRM800K)"
        UNCERTAINTY = "uncertainty", "uncertainty (where the PRM is least sure)"
        VERIFIER = "verifier", "imported verifier score"
        UNIFORM = "uniform", "uniform (random order, the control)"
        MIXED = "mixed", "half uncertainty, half convincing wrong answers"

    al_strategy = models.CharField(
        max_length=20,
        choices=Strategy.choices,
        # New campaigns: what measured best on real labels (docs/active-learning.md); campaigns
        # that existed before the setting keep PRM800K's rule (migration 0006).
        default=Strategy.UNIFORM,
        help_text="How active learning orders the queue.",
    )
    is_paused = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def lease_duration(self) -> timedelta:
        return timedelta(seconds=self.lease_seconds)


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
        db_table = "annotators_membership"
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
        db_table = "annotators_invitation"
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


class Problem(models.Model):
    """A math problem with its ground truth. Problems belong to one campaign."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="problems")
    text = models.TextField(help_text="Markdown with LaTeX (PRM800K question.problem).")
    ground_truth_answer = models.TextField(blank=True)
    ground_truth_solution = models.TextField(null=True, blank=True)
    subject = models.CharField(max_length=100, blank=True)
    level = models.CharField(max_length=20, blank=True)
    unique_id = models.CharField(max_length=200, blank=True, help_text="e.g. MATH unique_id")
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "content_hash"], name="problem_unique_text")
        ]

    def __str__(self) -> str:
        return self.text[:80]

    @staticmethod
    def hash_text(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()


class SolutionQuerySet(models.QuerySet):
    def regular(self) -> SolutionQuerySet:
        return self.filter(kind=Solution.Kind.REGULAR)

    def gold(self) -> SolutionQuerySet:
        return self.exclude(kind=Solution.Kind.REGULAR)

    def slots_change(self, *, campaign: Campaign, slots: int = 0, reports: int = 0) -> int:
        """Add held slots and bad problem reports, and reopen or close, in one UPDATE.

        The queue keeps ``assignment_count`` and ``is_open`` current with these relative updates
        (never read-modify-write in Python), so concurrent requests cannot lose one another's
        changes. Callers hold the rows' locks in id order (see ``labeling.queue``).
        """
        # In an UPDATE every right-hand side reads the old row, hence the shifted bounds.
        not_bad = Q(bad_problem_reports__lt=campaign.bad_problem_limit - reports)
        room = Q(assignment_count__lt=campaign.overlap - slots)
        return self.update(
            assignment_count=models.F("assignment_count") + slots,
            bad_problem_reports=models.F("bad_problem_reports") + reports,
            is_open=_open_expression(room, not_bad),
        )

    def refresh_queue_state(self) -> int:
        """Recount held slots and bad problem reports, and reopen or close; for imports, repairs.

        First releases the slots of leases that have expired (status ``expired``, the same as the
        queue's own reclaim), then recounts under row locks taken in id order, so it is exact even
        while annotators are being served. What holds a slot is ``Assignment.holds_slot``; what
        is open is ``Solution.is_open``. Returns the number of solutions updated.
        """
        with transaction.atomic():
            Assignment.objects.filter(
                solution__in=self.values("pk"),
                status=Assignment.Status.LEASED,
                lease_expires_at__lte=timezone.now(),
            ).update(status=Assignment.Status.EXPIRED)
            ids = list(
                self.order_by("pk").select_for_update(no_key=True).values_list("pk", flat=True)
            )
            held = (
                Assignment.objects.filter(solution=models.OuterRef("pk"))
                .filter(Assignment.holds_slot_q())
                .order_by()
                .values("solution")
                .annotate(n=models.Count("pk"))
                .values("n")
            )
            reports = (
                Assignment.objects.filter(
                    solution=models.OuterRef("pk"),
                    status=Assignment.Status.SUBMITTED,
                    finish_reason="bad_problem",
                )
                .order_by()
                .values("solution")
                .annotate(n=models.Count("pk"))
                .values("n")
            )
            campaign = Campaign.objects.filter(pk=models.OuterRef("campaign_id"))
            room = Q(assignment_count__lt=models.Subquery(campaign.values("overlap")[:1]))
            not_bad = Q(
                bad_problem_reports__lt=models.Subquery(campaign.values("bad_problem_limit")[:1])
            )
            # By id chunks: a snapshot of the rows (``self`` may filter on what changes here) that
            # stays under SQLite's limit on query parameters.
            for start in range(0, len(ids), 500):
                rows = Solution.objects.filter(pk__in=ids[start : start + 500])
                rows.update(
                    assignment_count=Coalesce(models.Subquery(held), 0),
                    bad_problem_reports=Coalesce(models.Subquery(reports), 0),
                )
                rows.update(is_open=_open_expression(room, not_bad))
        return len(ids)


def _open_expression(room: Q, not_bad: Q) -> models.Expression:
    """``is_open`` as SQL: regular solutions need a free slot; gold ones serve every annotator."""
    return models.Case(
        models.When(
            kind="regular",
            then=models.ExpressionWrapper(room & not_bad, output_field=models.BooleanField()),
        ),
        default=models.ExpressionWrapper(not_bad, output_field=models.BooleanField()),
        output_field=models.BooleanField(),
    )


class Solution(models.Model):
    """One model-generated solution to a problem, split into ordered steps.

    ``priority`` is the queue order (highest first, ties oldest first); active learning rewrites it
    in bulk. ``assignment_count`` is the number of slots held (``Assignment.holds_slot``).
    ``is_open`` says whether the queue may still serve it: a regular solution while it has fewer
    slots held than the campaign's overlap, any solution while it has fewer bad problem reports
    than the campaign's limit (quality-control and screening solutions are served to every
    annotator, so overlap does not close them). The claim query reads a partial index on it, so its
    cost does not grow with the number of finished solutions.
    """

    class Kind(models.TextChoices):
        REGULAR = "regular", "regular"
        QUALITY_CONTROL = "qc", "quality control"
        SCREENING = "screening", "screening"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="solutions")
    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="solutions")
    generator = models.CharField(max_length=200, blank=True)
    generation = models.IntegerField(null=True, blank=True, help_text="PRM800K generation")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.REGULAR)
    pre_generated = models.BooleanField(
        default=True,
        help_text="Steps were generated before labelling (PRM800K phase 2); "
        "false for phase 1 paths built by the labeler.",
    )
    answer = models.TextField(null=True, blank=True, help_text="Final answer")
    answer_is_correct = models.BooleanField(
        null=True, help_text="Graded against the ground truth; null when it could not be graded."
    )
    verifier_score = models.FloatField(null=True, blank=True)
    prm_score = models.FloatField(null=True, blank=True)
    priority = models.FloatField(default=0.0)
    is_open = models.BooleanField(default=True)
    assignment_count = models.PositiveIntegerField(
        default=0, help_text="Assignments holding a slot: submitted, or leased and unexpired."
    )
    bad_problem_reports = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=40, blank=True, help_text="Import format")
    source_ref = models.CharField(max_length=200, blank=True, help_text="Id in the source file")
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    objects = SolutionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "content_hash"], name="solution_unique_content"
            )
        ]
        indexes = [
            models.Index(
                "campaign",
                "kind",
                models.F("priority").desc(),
                "id",
                name="solution_queue",
                condition=Q(is_open=True),
            ),
        ]

    def __str__(self) -> str:
        return f"solution {self.pk} of problem {self.problem_id}"

    @staticmethod
    def hash_content(problem_text: str, steps: list[str], answer: str | None = None) -> str:
        """Identity of a solution within a campaign: same problem, steps and answer."""
        blob = json.dumps([problem_text, steps, answer], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


class Step(models.Model):
    """One step of a solution. ``gold_rating`` is set on quality-control and screening solutions."""

    solution = models.ForeignKey(Solution, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    text = models.TextField()
    gold_rating = models.SmallIntegerField(choices=Rating.choices, null=True, blank=True)

    class Meta:
        ordering = ["solution", "index"]
        constraints = [
            models.UniqueConstraint(fields=["solution", "index"], name="step_unique_index")
        ]

    def __str__(self) -> str:
        return f"step {self.index} of solution {self.solution_id}"


class Assignment(models.Model):
    """One annotator labelling one solution (a PRM800K label line once submitted).

    Life cycle (see ``labeling.queue``): ``leased`` holds a slot of the solution; the lease is
    live until ``lease_expires_at``, and an expired lease keeps its slot until the queue reclaims
    it (status ``expired``, slot released, drafts kept). ``skipped`` holds no slot and the solution
    is never served to that annotator again. ``submitted`` holds its slot for good, except with
    finish reason ``give_up`` or ``bad_problem``: those keep the labels but release the slot, so
    another annotator labels the solution in full.
    """

    RELEASING_REASONS = ("give_up", "bad_problem")

    class Status(models.TextChoices):
        LEASED = "leased", "leased"
        SUBMITTED = "submitted", "submitted"
        SKIPPED = "skipped", "skipped"
        EXPIRED = "expired", "expired"

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

    def lease_is_live(self, now=None) -> bool:
        now = now or timezone.now()
        return self.status == self.Status.LEASED and (
            self.lease_expires_at is None or self.lease_expires_at > now
        )


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

    class Meta:
        ordering = ["assignment", "step__index"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "step"], name="steplabel_unique_step")
        ]

    def __str__(self) -> str:
        return f"{self.rating} on step {self.step_id}"

    def completions(self, step_text: str) -> list[dict]:
        """PRM800K's ``completions`` list: the alternatives with the step's own one in place."""
        out = list(self.alternatives)
        if self.completion_index is not None:
            own = {"text": step_text, "rating": self.rating, "flagged": self.flagged}
            out.insert(self.completion_index, own)
        return out


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

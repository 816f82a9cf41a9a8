"""Campaigns, who is in them and how they got in (Membership, Invitation); ratings, finishes."""

from __future__ import annotations

import hashlib
import math
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from labeling.grading import rules as grading_rules
from labeling.traces import DEFAULT_KIND, TRACE_KIND_CHOICES, TraceKind, trace_kind


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

    @classmethod
    def words(cls, value: str | None) -> str:
        """What a page says for a stored value (``found_error``: "found an error")."""
        return cls(value).label if value in cls.values else (value or "")


# The PRM backbones active learning trains (names ``prm.build_backbone`` knows), as the settings
# form offers them. A campaign may hold another name set elsewhere (``hf:PATH`` for a local
# Hugging Face model on a GPU worker): the form keeps offering it, it does not invent it.
AL_BACKBONES = [
    ("bow", "bow: hashed n-grams with exact sympy checks (fast, CPU)"),
    ("minilm", "minilm: the pretrained MiniLM sentence encoder (slower, CPU or GPU)"),
]


# Active learning waits for at least this share of the labels its last run trained on before it
# retrains (``Campaign.al_labels_before_retrain``).
AL_RETRAIN_GROWTH = 0.1


class GradingRule(models.TextChoices):
    """How final answers are graded against the ground truth (``labeling.grading.rules``)."""

    MATHEMATICAL = grading_rules.MATHEMATICAL, grading_rules.RULES[grading_rules.MATHEMATICAL]
    PRM800K = grading_rules.PRM800K, grading_rules.RULES[grading_rules.PRM800K]


class CampaignQuerySet(models.QuerySet):
    def with_member(self, user) -> CampaignQuerySet:
        """Campaigns in which ``user`` is a member (``MembershipQuerySet.active``)."""
        return self.filter(
            models.Exists(
                Membership.objects.active().filter(campaign=models.OuterRef("pk"), user=user)
            )
        )


# The screening and QC pass mark on ``labeling.gold.scores``' score, set from measurement
# (``bench/gold_scores.py``): constant and uniformly random raters score at most 0.23 (95th
# percentile) on every gold set measured, raters who reproduce gold with 10% of steps changed at
# least 0.38 (5th percentile).
SCREENING_THRESHOLD_DEFAULT = 0.35
# The QC pause rule's defaults, set from measurement (``bench/qc_pause.py``, 900 PRM800K phase 1
# solutions, 100 QC questions per simulated annotator): the last 20 answers under 0.25 pause every
# constant and random rater at their 20th answer, and 1% of raters who reproduce gold with 10% of
# steps changed. A window of 10 at the screening pass mark (0.35) would pause 62% of those: a
# sliding window is tested after every answer, so it needs more answers and a lower mark than a
# gate scored once.
QC_PAUSE_WINDOW_DEFAULT = 20
QC_PAUSE_THRESHOLD_DEFAULT = 0.25
# Campaigns still on the old rule's default (share of steps alike) move to this one.
OLD_SCREENING_THRESHOLD_DEFAULT = 0.75


class Campaign(models.Model):
    """A labelling project: its solutions, who labels them, and how.

    Settings here drive the queue (overlap, lease, screening, quality control), the labelling page
    (stop at first error) and active learning.
    """

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    instructions = models.TextField(blank=True, help_text="Markdown, shown to annotators.")
    # What the campaign labels (``labeling.traces``): math solutions, or agent trajectories whose
    # assistant turns are the steps. Chosen when the campaign is made: its imports, page and
    # exports follow it.
    trace_kind = models.CharField(
        max_length=20,
        choices=TRACE_KIND_CHOICES,
        default=DEFAULT_KIND,
        db_default=DEFAULT_KIND,
        help_text="What the campaign labels: math solutions, or agent trajectories (each "
        "assistant turn with its tool calls is a step).",
    )
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
        default=SCREENING_THRESHOLD_DEFAULT,
        help_text=(
            "Score against gold needed to pass screening: the mean of Cohen's kappa with the gold"
            " ratings and the share of gold first errors found (0 for a careless rater, 1 for a"
            " perfect one)."
        ),
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
        default=500,
        help_text="Retrain the PRM after this many new submitted step labels (at least: a large "
        "campaign waits for 10% more labels than its last run trained on).",
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
        SERVED_PRM = "served-prm", "convincing wrong answers by the served PRM"
        ENSEMBLE = "ensemble", "ensemble disagreement (PRMs on resamples of the labels)"
        MACHINES_DISAGREE = (
            "machines-disagree",
            "where the machines disagree (PRM, rollouts, judge)",
        )
        AUTO = "auto", "auto (tries the others, moves to one measured to pay here)"

    al_strategy = models.CharField(
        max_length=20,
        choices=Strategy.choices,
        # New campaigns: what measured best on real labels (docs/active-learning.md); campaigns
        # that existed before the setting keep PRM800K's rule (migration 0011).
        default=Strategy.UNIFORM,
        # Database defaults on the columns added after the first release keep raw SQL that
        # names only the old columns (the benchmarks' loaders, operators' scripts) working.
        db_default=Strategy.UNIFORM,
        help_text="How active learning orders the queue.",
    )
    al_control_share = models.FloatField(
        default=0.2,
        db_default=0.2,
        help_text="Share of the queue placed uniformly at random (the control arm) while a "
        "strategy other than uniform orders it: what tells whether active learning pays.",
    )
    # A PRM served elsewhere (a declared ``pooling`` or ``step-scores`` endpoint, by name; the
    # URL and key are the operator's): its scores steer the ``served-prm`` strategy and are
    # shown beside the campaign's own PRM (machines.served).
    al_scoring_endpoint = models.CharField(
        max_length=50,
        blank=True,
        default="",
        db_default="",
        help_text="A declared scoring endpoint whose PRM scores the open solutions.",
    )
    al_scoring_model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",
        help_text="The endpoint's model to ask (blank: its first).",
    )
    relabel_by_same_annotator = models.BooleanField(
        default=False,
        db_default=False,
        help_text="A rejected solution may be served again to the annotator whose work was "
        "rejected (by default someone else relabels it).",
    )
    # PRM800K's phase 1 (labeling.models.candidates): at each step the annotator rates several
    # candidate next steps for the same prefix and chooses one, or writes their own.
    phase1_mode = models.BooleanField(
        default=False,
        db_default=False,
        help_text="PRM800K phase 1: at each step rate several candidate next steps, then choose "
        "the one to continue with or write your own; the solution grows as you choose.",
    )
    # Where phase 1 mode samples candidates for a prefix its tree lacks: a declared chat
    # endpoint by name (the URL and key are the operator's), one of its models, how many.
    phase1_endpoint = models.CharField(
        max_length=50,
        blank=True,
        default="",
        db_default="",
        help_text="A declared chat endpoint that samples candidate next steps (blank: none).",
    )
    phase1_model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",
        help_text="The endpoint's model to ask (blank: its first).",
    )
    phase1_samples = models.PositiveSmallIntegerField(
        default=4,
        db_default=4,
        help_text="Candidate next steps sampled for a prefix.",
    )
    reviewers_see_evidence = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Reviewers see the machine evidence (rollout values, a judge's verdict) on the "
        "review page. Annotators never see it on the labelling page.",
    )
    # The pause rule (off by default): ``labeling.queue.qc_pause``, evaluated after each QC
    # submission. Database defaults, as the columns above, for raw SQL that predates them.
    qc_pause = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Pause an annotator whose QC score over their last N quality-control questions "
        "falls below the pause threshold (they are told why; a manager can resume them).",
    )
    qc_pause_window = models.PositiveSmallIntegerField(
        default=QC_PAUSE_WINDOW_DEFAULT,
        db_default=QC_PAUSE_WINDOW_DEFAULT,
        help_text="N: how many of an annotator's latest quality-control questions the pause rule "
        "scores; nobody is paused before answering N.",
    )
    qc_pause_threshold = models.FloatField(
        default=QC_PAUSE_THRESHOLD_DEFAULT,
        db_default=QC_PAUSE_THRESHOLD_DEFAULT,
        help_text="The QC score (as screening's) under which the rule pauses: measured to stop "
        "careless raters and to spare careful ones (docs/campaigns.md).",
    )
    # New campaigns grade mathematically; the first import in one of PRM800K's formats into a
    # campaign without solutions sets PRM800K's rule (imports.pipeline), so PRM800K's solutions
    # grade as its labels were made. Changing it regrades the campaign (a job: services).
    grading_rule = models.CharField(
        max_length=20,
        choices=GradingRule.choices,
        default=GradingRule.MATHEMATICAL,
        db_default=GradingRule.MATHEMATICAL,
        help_text="How final answers are graded against the ground truth: mathematically equal "
        "(6/10 is 3/5, a list is a set), or as PRM800K's reference grader graded (answers in "
        "the form MATH expects: 6/10 is not 3/5, lists in order). Changing it grades every "
        "solution again.",
    )
    is_paused = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = CampaignQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def kind(self) -> TraceKind:
        """The declaration of what this campaign labels (``labeling.traces``)."""
        return trace_kind(self.trace_kind)

    @property
    def lease_duration(self) -> timedelta:
        return timedelta(seconds=self.lease_seconds)

    def al_labels_before_retrain(self, *, trained_on: int) -> int:
        """New submitted labels after which active learning retrains, given how many labels
        its last run trained on.

        ``al_retrain_every``, or ``AL_RETRAIN_GROWTH`` of the labels trained on when that is
        more. A run's cost grows with the labels (a million take minutes to train and score),
        so a fixed step would keep a large campaign retraining back to back for a few hundred
        labels each time; growing geometrically, the runs over a campaign's life cost at most
        ``1 + 1 / AL_RETRAIN_GROWTH`` (11) times one run at its final size, and each run
        brings at least 10% more labels. Below ``al_retrain_every / AL_RETRAIN_GROWTH`` labels
        (5,000 by default) the setting alone decides.
        """
        return max(1, self.al_retrain_every, math.ceil(AL_RETRAIN_GROWTH * max(0, trained_on)))

    @property
    def al_backbone_label(self) -> str:
        return dict(AL_BACKBONES).get(self.al_backbone, self.al_backbone)


class MembershipQuerySet(models.QuerySet):
    """The one home of "who is a member of a campaign".

    A member is someone with an ``active`` membership: pages, the API and the campaign list let
    them in (``labeling.permissions.campaign_for``), and the queue serves them. A paused or
    removed membership keeps its row (and the person's work) but lets nobody in. The queue's hot
    path finds the row with plain SQL whatever its status and then refuses an inactive one with
    ``Membership.is_active``, the Python form (tests/test_rules_membership.py holds them to the
    same people).
    """

    def active(self) -> MembershipQuerySet:
        return self.filter(status=Membership.Status.ACTIVE)

    def managers(self) -> MembershipQuerySet:
        """Active managers: a campaign must keep one."""
        return self.active().filter(role=Membership.Role.MANAGER)

    def roles_of(self, user) -> dict[int, str]:
        """campaign id -> the role ``user`` holds there, for the campaigns they are a member of."""
        return dict(self.active().filter(user=user).values_list("campaign_id", "role"))


class Membership(models.Model):
    """A person's role in one campaign. The same person may hold different roles elsewhere.

    ``screening`` records where an annotator stands with the campaign's screening gate.
    ``is_imported`` marks the accounts an import made for the labelers its file names (PRM800K's
    labeler ids): nobody logs in with them, so they are not active annotators, are never waiting
    for screening, and pages leave them out unless asked (``?show_imported=1``).
    """

    # How many characters of an imported account's name the pages show (PRM800K's labeler ids
    # are UUIDs: eight characters tell them apart).
    SHORT_ID = 8

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
    is_imported = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Made by an import for a labeler in its file; nobody logs in.",
    )
    # The last pause: when, and (for the campaign's QC pause rule) why, in words the annotator
    # and the manager read, with the figures behind it. A manager who resumes the member sets
    # ``resumed_at``: the rule then scores only QC questions answered after it, so the same
    # old answers do not pause them again at the next one.
    paused_at = models.DateTimeField(null=True, blank=True)
    pause_reason = models.TextField(blank=True, default="", db_default="")
    pause_figures = models.JSONField(null=True, blank=True)
    resumed_at = models.DateTimeField(null=True, blank=True)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        db_table = "annotators_membership"
        constraints = [
            models.UniqueConstraint(fields=["user", "campaign"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.campaign}"

    @property
    def is_active(self) -> bool:
        """``MembershipQuerySet.active`` for this row as loaded."""
        return self.status == self.Status.ACTIVE

    @property
    def paused_by_rule(self) -> bool:
        """Paused now by the campaign's QC pause rule (not by a manager)."""
        return self.status == self.Status.PAUSED and self.pause_figures is not None

    @property
    def pause_summary(self) -> str:
        """Who paused a paused member, when and why, in a few words for the manager's pages."""
        if self.status != self.Status.PAUSED:
            return ""
        when = f" on {self.paused_at:%Y-%m-%d %H:%M} UTC" if self.paused_at else ""
        figures = self.pause_figures
        if figures is None:
            return f"by a manager{when}"
        return (
            f"by the QC rule{when}: score {figures['score']:.2f} over the last "
            f"{figures['questions']} QC questions, under {figures['threshold']:.2f}"
        )

    @property
    def pause_notice(self) -> str:
        """What a paused annotator is told when they ask for work."""
        if not self.paused_by_rule:
            return ""
        return (
            f"{self.pause_reason} No more work is served to you in this campaign until a "
            "campaign manager resumes you."
        )

    @staticmethod
    def screening_failed_notice(*, campaign: Campaign, screening: str | None, score) -> str:
        """What an annotator who did not pass ``campaign``'s screening is told wherever they
        look (Home, the labelling page, the queue's refusal): no more work, with their score and
        the pass mark; never which question went wrong. Empty unless they failed a screening
        the campaign requires (a manager may turn screening off: the gate is gone then)."""
        if not campaign.requires_screening or screening != Membership.Screening.FAILED:
            return ""
        said = f"{score:.2f}" if score is not None else "–"
        return (
            f"You did not pass this campaign's screening: your score is {said} and it needs "
            f"{campaign.screening_threshold:.2f} or more (agreement with the reference ratings "
            "beyond chance, and how often you found the first wrong step). No more work is "
            "served to you here. Thank you for your time."
        )

    @property
    def screening_shown(self) -> str:
        """The screening state as pages show it: imported accounts are never screened."""
        return "not screened (imported)" if self.is_imported else self.screening

    @classmethod
    def short_name(cls, username: str, *, imported: bool) -> str:
        """An imported account by a short id (``imported 340d89bc``); anyone else by name."""
        return f"imported {username[: cls.SHORT_ID]}" if imported else username

    @property
    def display_name(self) -> str:
        return self.short_name(self.user.get_username(), imported=self.is_imported)


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

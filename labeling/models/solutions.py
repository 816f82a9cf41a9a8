"""Problems and the model solutions to them, split into steps; the queue state of a solution."""

from __future__ import annotations

import hashlib
import json

from django.apps import apps
from django.db import connection, models, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from labeling.models.campaigns import Campaign, Rating
from labeling.models.disputes import DISPUTED_STEP_COUNT_SQL


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
        room = Q(assignment_count__lt=models.F("extra_labels") + (campaign.overlap - slots))
        return self.update(
            assignment_count=models.F("assignment_count") + slots,
            bad_problem_reports=models.F("bad_problem_reports") + reports,
            is_open=open_expression(room, not_bad),
        )

    def disputes_recount(self) -> int:
        """Recount ``disputed_steps`` of these solutions from their labels, in one UPDATE.

        Called wherever the set of submitted labels of a solution changes (submit, amend, review
        outcome, import), for just the solutions touched: the count is computed by
        ``disputed_step_count`` (the rule's SQL), never adjusted by hand, so it cannot drift
        from the rule. tests/test_disputes_kept.py holds it to the rule after every change.
        """
        return disputes_recount(list(self.order_by("pk").values_list("pk", flat=True)))

    def refresh_queue_state(self) -> int:
        """Recount held slots and bad problem reports, and reopen or close; for imports, repairs.

        First releases the slots of leases that have expired (status ``expired``, the same as the
        queue's own reclaim), then recounts under row locks taken in id order, so it is exact even
        while annotators are being served. What holds a slot is ``Assignment.holds_slot``; what
        is open is ``Solution.is_open``. Returns the number of solutions updated.
        """
        # By name: labels.py imports this module for its foreign keys.
        Assignment = apps.get_model("labeling", "Assignment")

        with transaction.atomic():
            Assignment.objects.expired_leases().filter(solution__in=self.values("pk")).update(
                status=Assignment.Status.EXPIRED
            )
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
            room = Q(
                assignment_count__lt=models.Subquery(campaign.values("overlap")[:1])
                + models.F("extra_labels")
            )
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
                rows.update(is_open=open_expression(room, not_bad))
        return len(ids)


def disputes_recount(solution_ids: list[int], *, locked: bool = False) -> int:
    """``SolutionQuerySet.disputes_recount`` for solutions known by id (a submit knows its one):
    a lock and one UPDATE per 500, in plain SQL, since it runs inside every submit (the hot
    path), where the ORM's query building would cost more than the two statements. ``locked``:
    the caller's transaction already holds these solutions' row locks, taken in an earlier
    statement (the submit locks its solution with its assignment), so the UPDATE alone."""
    ids = sorted(solution_ids)
    lock = " FOR NO KEY UPDATE" if connection.vendor == "postgresql" else ""
    updated = 0
    # No savepoint of its own: it runs inside the submit's transaction on the hot path.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ", ".join(["%s"] * len(chunk))
            # The lock first, in a statement of its own: under READ COMMITTED the UPDATE's
            # snapshot then sees the labels of a concurrent writer of the same solution
            # that committed while this one waited (the UPDATE's own wait would re-read the
            # row but not the labels its subquery counts).
            if not locked:
                cursor.execute(
                    f"SELECT id FROM labeling_solution WHERE id IN ({marks}) ORDER BY id{lock}",
                    chunk,
                )
            cursor.execute(
                "UPDATE labeling_solution SET disputed_steps ="
                f" {DISPUTED_STEP_COUNT_SQL} WHERE id IN ({marks})",
                chunk,
            )
            updated += cursor.rowcount
    return updated


def open_expression(room: Q, not_bad: Q) -> models.Expression:
    """``is_open`` as SQL: regular solutions need a free slot; gold ones serve every annotator;
    an archived solution is never open. ``is_open_value`` is the same rule in Python."""
    return models.Case(
        models.When(archived=True, then=models.Value(False)),
        models.When(
            kind="regular",
            then=models.ExpressionWrapper(room & not_bad, output_field=models.BooleanField()),
        ),
        default=models.ExpressionWrapper(not_bad, output_field=models.BooleanField()),
        output_field=models.BooleanField(),
    )


def is_open_value(
    campaign: Campaign,
    *,
    kind: str,
    slots: int,
    reports: int = 0,
    extra_labels: int = 0,
    archived: bool = False,
) -> bool:
    """``open_expression`` for a row written outside the ORM (an import's COPY): its ``is_open``
    with ``slots`` held and ``reports`` bad problem reports."""
    if archived or reports >= campaign.bad_problem_limit:
        return False
    return kind != Solution.Kind.REGULAR or slots < campaign.overlap + extra_labels


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
    # Which arm of active learning placed it in the queue (``learning.strategies.place``):
    # ``strategy``, ``control`` (uniformly at random, the share ``al_control_share``), or blank
    # (never placed by a run). A run rewrites it on open solutions only, so a served solution
    # keeps the arm that placed it (with overlap above 1: the last run's before it closed).
    al_arm = models.CharField(max_length=10, blank=True, default="", db_default="")
    # The strategy that placed it on the strategy arm (``learning.strategies.place``): the
    # campaign's, or under ``auto`` the one it ordered by or one of its trials; blank on the
    # control arm and for solutions no run placed. Each strategy is measured on its own labels.
    al_placed_by = models.CharField(max_length=20, blank=True, default="", db_default="")
    is_open = models.BooleanField(default=True)
    archived = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Out of the queue for good (labels kept) until restored.",
    )
    extra_labels = models.PositiveIntegerField(
        default=0, db_default=0, help_text="Labels wanted beyond the campaign's overlap (requeues)."
    )
    import_job_id = models.BigIntegerField(
        null=True, blank=True, help_text="The import job (imports.ImportJob) that created it."
    )
    assignment_count = models.PositiveIntegerField(
        default=0, help_text="Assignments holding a slot: submitted, or leased and unexpired."
    )
    bad_problem_reports = models.PositiveIntegerField(default=0)
    disputed_steps = models.PositiveIntegerField(
        default=0,
        db_default=0,
        help_text="Steps annotators disagree on (StepLabelQuerySet's rule), kept by "
        "disputes_recount wherever submitted labels change.",
    )
    # An agent trajectory's whole conversation (``labeling.traces``): its messages in OpenAI's
    # chat shape (system, user, assistant with ``tool_calls``, tool results), the tools' schemas,
    # the message index of each step, and the source's own fields an export gives back. Null for
    # a math solution. The steps keep what is rated; this keeps what is context.
    trace = models.JSONField(null=True, blank=True)
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
                condition=Q(is_open=True, archived=False),
            ),
            # The data browser's default order (queue order over every solution, not only the
            # open ones): a page walks it and stops, instead of sorting the campaign.
            models.Index(
                "campaign", models.F("priority").desc(), "id", name="solution_browse_queue"
            ),
            models.Index(fields=["campaign", "import_job_id"], name="solution_by_import_job"),
            # The data browser's disagreement sort walks it; the adjudication queue reads the
            # solutions with any dispute from it.
            models.Index(
                "campaign", models.F("disputed_steps").desc(), "id", name="solution_by_disputes"
            ),
        ]

    def __str__(self) -> str:
        return f"solution {self.pk} of problem {self.problem_id}"

    @staticmethod
    def hash_content(
        problem_text: str, steps: list[str], answer: str | None = None, trace: dict | None = None
    ) -> str:
        """Identity of a solution within a campaign: same problem, steps and answer (and, for a
        trajectory, the same conversation: two runs may differ only in a tool's result)."""
        what: list = [problem_text, steps, answer]
        if trace is not None:
            what.append(trace)
        blob = json.dumps(what, ensure_ascii=False, sort_keys=trace is not None)
        return hashlib.sha256(blob.encode()).hexdigest()


class Step(models.Model):
    """One step of a solution. ``gold_rating`` is set on quality-control and screening solutions.

    ``text`` is what annotators see and what exports write; ``raw_text`` keeps what the splitter
    removed from it (GSM8K's ``<<60-20=40>>``), so nothing the model wrote is lost.
    """

    solution = models.ForeignKey(Solution, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    text = models.TextField()
    raw_text = models.TextField(
        blank=True,
        default="",
        db_default="",  # raw inserts (benchmarks, COPY) that do not name it stay valid
        help_text="The step as the model wrote it, when the displayed text differs "
        "(GSM8K calculator annotations removed); empty when they are the same.",
    )
    gold_rating = models.SmallIntegerField(choices=Rating.choices, null=True, blank=True)
    # A trajectory's assistant turn, structured (``labeling.traces``): its message index, text,
    # tool calls (name, arguments) and their results, and the context messages just before it.
    # ``text`` is the same turn flattened (the kind's ``step_text``). Null for a math step.
    content = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["solution", "index"]
        constraints = [
            models.UniqueConstraint(fields=["solution", "index"], name="step_unique_index")
        ]

    def __str__(self) -> str:
        return f"step {self.index} of solution {self.solution_id}"

"""What the labelling page and the API show an annotator: reads only, no writes.

An annotator sees the problem, its ground-truth answer (as PRM800K's labelers did), the steps and
their own labels. Never gold ratings (``Step.gold_rating``), never other annotators' labels, and
never whether a solution is a quality-control question: the queries below select only the
columns that may be shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Count, Exists, IntegerField, Min, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotators.models import Membership
from annotators.permissions import campaigns_visible_to
from labeling.models import Assignment, Campaign, Solution, StepLabel
from labeling.services import NotAMember, NotLeaseHolder, _first, human_completion_load


@dataclass(frozen=True)
class StepView:
    index: int
    text: str


@dataclass(frozen=True)
class LabelView:
    step_index: int
    rating: int
    flagged: bool
    human_completion: str | None
    time_spent_ms: int | None


@dataclass(frozen=True)
class AssignmentView:
    id: int
    campaign: str
    solution_id: int
    status: str
    is_screening: bool
    lease_expires_at: datetime | None
    stop_at_first_error: bool
    instructions: str
    problem: str
    ground_truth_answer: str
    steps: list[StepView]
    labels: list[LabelView]


@dataclass(frozen=True)
class NoWork:
    """Why the queue has nothing for this annotator right now."""

    reason: str  # "all_leased": come back later; "done": nothing left for them
    detail: str
    retry_after: int | None = None  # seconds, for "all_leased"


def assignment_get(*, assignment_id: int, user) -> Assignment:
    """The assignment (with its campaign), for its holder only; else ``NotLeaseHolder``.

    Superusers may read any assignment (they see everything), but only the holder may act on it
    (the services check that again).
    """
    assignment = _first(
        Assignment.objects.raw("SELECT * FROM labeling_assignment WHERE id = %s", [assignment_id])
    )
    if assignment is None or (assignment.annotator_id != user.pk and not user.is_superuser):
        raise NotLeaseHolder("No such assignment.")
    assignment.campaign = _first(
        Campaign.objects.raw(
            "SELECT * FROM labeling_campaign WHERE id = %s", [assignment.campaign_id]
        )
    )
    return assignment


def membership_campaign(*, slug: str, user) -> Campaign:
    """The campaign with this slug if the user is a member of it, else ``NotAMember``."""
    campaign = _first(
        Campaign.objects.raw(
            "SELECT c.* FROM labeling_campaign c JOIN annotators_membership m"
            " ON m.campaign_id = c.id WHERE c.slug = %s AND m.user_id = %s",
            [slug, user.pk],
        )
    )
    if campaign is None:
        raise NotAMember("No such campaign.")
    return campaign


def assignment_view(*, assignment: Assignment) -> AssignmentView:
    """The assignment as its annotator sees it: problem, steps, and their own labels only.

    Plain SQL, like the rest of the hot path (see ``labeling.services``); the label join is on
    this assignment alone, so no other annotator's label can come along.
    """
    campaign = assignment.campaign
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.kind, p.text, p.ground_truth_answer FROM labeling_solution s"
            " JOIN labeling_problem p ON p.id = s.problem_id WHERE s.id = %s",
            [assignment.solution_id],
        )
        kind, problem, answer = cursor.fetchone()
        cursor.execute(
            'SELECT st."index", st.text, l.rating, l.flagged, l.human_completion, l.time_spent_ms'
            " FROM labeling_step st LEFT JOIN labeling_steplabel l"
            " ON l.step_id = st.id AND l.assignment_id = %s"
            ' WHERE st.solution_id = %s ORDER BY st."index"',
            [assignment.pk, assignment.solution_id],
        )
        rows = cursor.fetchall()
    steps, labels = [], []
    for index, text, rating, flagged, correction, ms in rows:
        steps.append(StepView(index=index, text=text))
        if rating is not None:
            labels.append(
                LabelView(
                    step_index=index,
                    rating=rating,
                    flagged=bool(flagged),
                    human_completion=(human_completion_load(correction) or {}).get("text"),
                    time_spent_ms=ms,
                )
            )
    return AssignmentView(
        id=assignment.pk,
        campaign=campaign.slug,
        solution_id=assignment.solution_id,
        status=assignment.status,
        is_screening=kind == Solution.Kind.SCREENING,
        lease_expires_at=assignment.lease_expires_at,
        stop_at_first_error=campaign.stop_at_first_error,
        instructions=campaign.instructions,
        problem=problem,
        ground_truth_answer=answer,
        steps=steps,
        labels=labels,
    )


def queue_no_work(*, campaign: Campaign, annotator) -> NoWork:
    """Why ``assignment_next`` found nothing: others hold the rest (retry later), or all is done."""
    now = timezone.now()
    held = (
        Assignment.objects.filter(
            campaign=campaign, status=Assignment.Status.LEASED, lease_expires_at__gt=now
        )
        .exclude(annotator=annotator)
        .exclude(solution__assignments__annotator=annotator)
        .aggregate(first=Min("lease_expires_at"))["first"]
    )
    if held is not None:
        return NoWork(
            reason="all_leased",
            detail="Every solution left is being labelled by others right now; "
            "some may come back when their leases expire.",
            retry_after=max(1, int((held - now).total_seconds()) + 1),
        )
    return NoWork(reason="done", detail="There is nothing left for you to label here. Thank you!")


def campaigns_progress(*, user):
    """The user's campaigns (``campaigns_visible_to``) for their home page, each annotated with:

    ``left`` (open regular solutions they have never had), ``solutions_today`` and
    ``steps_today`` (their submissions since midnight, server time, and the steps rated in
    them), ``in_progress`` (they hold a live lease) and ``role`` (None for a site admin who is
    not a member). One query, whatever the number of campaigns.
    """
    now = timezone.now()
    today = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    mine = Assignment.objects.filter(campaign=OuterRef("pk"), annotator=user)
    done_today = mine.filter(status=Assignment.Status.SUBMITTED, submitted_at__gte=today)
    open_for_me = Solution.objects.filter(
        campaign=OuterRef("pk"), kind=Solution.Kind.REGULAR, is_open=True
    ).exclude(Exists(Assignment.objects.filter(solution=OuterRef("pk"), annotator=user)))
    steps_today = StepLabel.objects.filter(
        assignment__campaign=OuterRef("pk"),
        assignment__annotator=user,
        assignment__status=Assignment.Status.SUBMITTED,
        assignment__submitted_at__gte=today,
        rating__isnull=False,
    )
    return campaigns_visible_to(user).annotate(
        left=_count(open_for_me),
        solutions_today=_count(done_today),
        steps_today=_count(steps_today),
        in_progress=Exists(mine.filter(status=Assignment.Status.LEASED, lease_expires_at__gt=now)),
        role=Subquery(
            Membership.objects.filter(campaign=OuterRef("pk"), user=user).values("role")[:1]
        ),
    )


def _count(queryset) -> Coalesce:
    """``COUNT(*)`` of a correlated queryset as an annotation (0 when it has no rows)."""
    counted = queryset.order_by().annotate(_one=Value(1)).values("_one")
    counted = counted.annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


# --- Active learning (the manager's page) ----------------------------------------------------


def active_learning_runs(*, campaign: Campaign, limit: int = 50):
    """The campaign's latest active-learning runs with their model, newest first."""
    from labeling.models import ActiveLearningRun

    return list(
        ActiveLearningRun.objects.filter(campaign=campaign)
        .select_related("model", "requested_by")
        .order_by("-created_at", "-pk")[:limit]
    )


def prm_models(*, campaign: Campaign):
    """The campaign's PRM versions, oldest first (the metrics chart reads them in order)."""
    from labeling.models import PRMModel

    return list(PRMModel.objects.filter(campaign=campaign).order_by("version"))


@dataclass(frozen=True)
class QueueHead:
    size: int
    wrong: int
    correct: int
    ungraded: int
    scored: int
    histogram: list[tuple[str, int]]  # PRM score bins of the head, "0.0-0.1" -> count
    open_total: int


def queue_head(*, campaign: Campaign, size: int = 100, bins: int = 10) -> QueueHead:
    """The first ``size`` open regular solutions in queue order: what annotators get next.

    The queue order itself (priority, then id) is the claim's; a solution's labels are not read.
    """
    open_regular = Solution.objects.filter(
        campaign=campaign, kind=Solution.Kind.REGULAR, is_open=True
    )
    head = list(
        open_regular.order_by("-priority", "pk").values_list("answer_is_correct", "prm_score")[
            :size
        ]
    )
    counts = [0] * bins
    for _, score in head:
        if score is not None:
            counts[min(bins - 1, max(0, int(score * bins)))] += 1
    return QueueHead(
        size=len(head),
        wrong=sum(1 for correct, _ in head if correct is False),
        correct=sum(1 for correct, _ in head if correct is True),
        ungraded=sum(1 for correct, _ in head if correct is None),
        scored=sum(1 for _, score in head if score is not None),
        histogram=[(f"{i / bins:.1f}", counts[i]) for i in range(bins)],
        open_total=open_regular.count(),
    )

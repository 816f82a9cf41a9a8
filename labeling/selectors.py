"""What the labelling page and the API show an annotator: reads only, no writes.

An annotator sees the problem, its ground-truth answer (as PRM800K's labelers did), the steps and
their own labels. Never gold ratings (``Step.gold_rating``), never other annotators' labels, and
never whether a solution is a quality-control question: the queries below select only the
columns that may be shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import (
    Count,
    Exists,
    F,
    Min,
    OuterRef,
    Subquery,
)
from django.db.models.functions import Left
from django.utils import timezone

from labeling.models import (
    Assignment,
    Campaign,
    FinishReason,
    Membership,
    Review,
    Solution,
    Step,
    StepLabel,
)
from labeling.permissions import campaigns_visible_to
from labeling.queue import (
    MembershipInactive,
    NotLeaseHolder,
    first_error_found,
    human_completion_load,
    model_columns,
    model_from_row,
)


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
    # One query, plain SQL (the hot path): the assignment, its campaign, the holder's membership.
    columns = f"{model_columns(Assignment, 'a')}, m.status, {model_columns(Campaign, 'c')}"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM labeling_assignment a"
            " JOIN labeling_campaign c ON c.id = a.campaign_id"
            " LEFT JOIN annotators_membership m"
            " ON m.campaign_id = a.campaign_id AND m.user_id = a.annotator_id WHERE a.id = %s",
            [assignment_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise NotLeaseHolder("No such assignment.")
    n = len(Assignment._meta.concrete_fields)
    assignment = model_from_row(Assignment, row[:n])
    membership_status = row[n]
    assignment.campaign = model_from_row(Campaign, row[n + 1 :])
    if assignment.annotator_id != user.pk and not user.is_superuser:
        raise NotLeaseHolder("No such assignment.")
    # A member removed from the campaign loses their assignments with it.
    removed = membership_status in (None, Membership.Status.REMOVED)
    if removed and not user.is_superuser:
        raise MembershipInactive()
    return assignment


def assignment_view(*, assignment: Assignment) -> AssignmentView:
    """The assignment as its annotator sees it: problem, steps, and their own labels only.

    Plain SQL, like the rest of the hot path (see ``labeling.queue``), in one statement (the
    problem comes along on each step's row: a few kB, cheaper than a second round trip); the
    label join is on this assignment alone, so no other annotator's label can come along.
    """
    campaign = assignment.campaign
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.kind, p.text, p.ground_truth_answer,"
            ' st."index", st.text, l.rating, l.flagged, l.human_completion, l.time_spent_ms'
            " FROM labeling_solution s JOIN labeling_problem p ON p.id = s.problem_id"
            " LEFT JOIN labeling_step st ON st.solution_id = s.id"
            " LEFT JOIN labeling_steplabel l ON l.step_id = st.id AND l.assignment_id = %s"
            ' WHERE s.id = %s ORDER BY st."index"',
            [assignment.pk, assignment.solution_id],
        )
        rows = cursor.fetchall()
    kind, problem, answer = rows[0][:3]
    steps, labels = [], []
    for *_, index, text, rating, flagged, correction, ms in rows:
        if index is None:  # a solution without steps: its one row has no step
            continue
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
        Assignment.objects.live_leases(now)
        .filter(campaign=campaign)
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
    """The user's campaigns (``campaigns_visible_to``) for their home page, each annotated with
    ``in_progress`` (they hold a live lease) and ``role`` (None for a site admin who is not a
    member). One query, whatever the number of campaigns; what is left for them and what they
    did today are ``my_figures`` (the labelling page shows the same)."""
    mine = Assignment.objects.filter(campaign=OuterRef("pk"), annotator=user)
    return campaigns_visible_to(user).annotate(
        in_progress=Exists(mine.live_leases(timezone.now())),
        role=Subquery(
            Membership.objects.filter(campaign=OuterRef("pk"), user=user).values("role")[:1]
        ),
    )


# Rejections of my work are shown on the labelling page for this long after the review.
REJECTIONS_SHOWN_DAYS = 14
REJECTIONS_SHOWN = 3


@dataclass(frozen=True)
class SessionWork:
    """What one annotator submitted in a campaign since ``since`` (their labelling session)."""

    since: datetime
    solutions: int
    steps: int
    time_ms: int

    @property
    def time_text(self) -> str:
        """The time spent on those solutions, as the page says it ("12 min", "1 h 05 min")."""
        minutes = round(self.time_ms / 60_000)
        if self.solutions and minutes == 0:
            return "under a minute"
        if minutes < 60:
            return f"{minutes} min"
        return f"{minutes // 60} h {minutes % 60:02d} min"


def my_pauses(*, user) -> list[Membership]:
    """The user's paused memberships, with their campaigns, for Home: why no work is served
    there (the QC pause rule's reason and figures, or a manager's pause). One query."""
    return list(
        Membership.objects.filter(user=user, status=Membership.Status.PAUSED)
        .select_related("campaign")
        .order_by("campaign__name")
    )


def paused_campaign_for(*, user, slug: str) -> Campaign | None:
    """The campaign ``slug`` if the user's membership of it is paused (the labelling page tells
    them why there instead of answering 404, as for a campaign they are not in)."""
    membership = (
        Membership.objects.filter(user=user, campaign__slug=slug, status=Membership.Status.PAUSED)
        .select_related("campaign")
        .first()
    )
    return membership.campaign if membership else None


@dataclass(frozen=True)
class MyFigures:
    """What Home and the labelling page say about one annotator in one campaign: ``left``
    (open regular solutions they have never had), ``solutions_today`` and ``steps_today``
    (their submissions since midnight, server time, and the steps rated in them), the
    campaign's progress as they see it, ``done`` of ``wanted`` (``CampaignCounts``), their
    ``session`` (``SessionWork`` since the ``session_since`` asked for; since midnight when none
    was) and ``rejected_recently`` (their work rejected in the last ``REJECTIONS_SHOWN_DAYS``:
    the labelling page reads the rejections themselves only when there are some)."""

    left: int
    solutions_today: int
    steps_today: int
    done: int
    wanted: int
    session: SessionWork
    rejected_recently: int


def my_figures(
    *, user, campaigns: Sequence[Campaign], session_since: datetime | None = None
) -> dict[int, MyFigures]:
    """``MyFigures`` for each of ``campaigns``, by campaign id, without counting any campaign.

    The campaign's counts are kept (``campaign_counts``: recounted at most every
    ``STEPWISE_PROGRESS_SECONDS``); what this annotator did since they were counted is seen at
    once: ``left`` is the open count less the open solutions they have had and those they
    leased since the count and so closed; ``done`` is the count plus the solutions that their
    submissions since the count completed. ``session`` counts their submissions since
    ``session_since`` (their labelling session), with the time the page measured on them (the
    sum of their total times, not the wall clock). One query over the annotator's own rows in
    these campaigns (``assignment_by_annotator``): it grows with their work, never with a
    campaign.
    """
    if not campaigns:
        return {}
    kept = {c.pk: campaign_counts(campaign=c) for c in campaigns}
    overlap = {c.pk: c.overlap for c in campaigns}
    adapt = connection.ops.adapt_datetimefield_value
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    since = session_since or today
    rejections_since = timezone.now() - timedelta(days=REJECTIONS_SHOWN_DAYS)
    rated = (
        "(SELECT COUNT(*) FROM labeling_steplabel l"
        " WHERE l.assignment_id = a.id AND l.rating IS NOT NULL)"
    )
    ids = list(kept)
    marks = ", ".join(["%s"] * len(ids))
    by_campaign = " ".join(["WHEN %s THEN %s"] * len(ids))
    done = ", ".join(["%s"] * len(Assignment.DONE_STATUSES))
    releasing = ", ".join(["%s"] * len(Assignment.RELEASING_REASONS))
    # A submission that counts towards ``done`` (``campaign_counts_counted``'s rule), of a or b.
    counted = "{0}.status = %s AND {0}.finish_reason NOT IN (" + releasing + ")"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.campaign_id,"
            " COUNT(DISTINCT CASE WHEN s.kind = %s AND s.is_open THEN s.id END),"
            " COUNT(DISTINCT CASE WHEN s.kind = %s AND NOT s.is_open"
            f" AND a.leased_at >= CASE a.campaign_id {by_campaign} END THEN s.id END),"
            f" SUM(CASE WHEN a.status IN ({done}) AND a.submitted_at >= %s THEN 1 ELSE 0 END),"
            f" SUM(CASE WHEN a.status IN ({done}) AND a.submitted_at >= %s THEN {rated}"
            " ELSE 0 END),"
            # Nested CASEs: the count over the solution runs for recent submissions only.
            f" COUNT(DISTINCT CASE WHEN s.kind = %s AND {counted.format('a')}"
            f"  AND a.submitted_at >= CASE a.campaign_id {by_campaign} END THEN"
            "  CASE WHEN (SELECT COUNT(*) FROM labeling_assignment b"
            f"   WHERE b.solution_id = s.id AND {counted.format('b')})"
            f"  >= CASE s.campaign_id {by_campaign} END THEN s.id END END),"
            # The session: submissions since it began, their measured time and rated steps.
            " SUM(CASE WHEN a.status = %s AND a.submitted_at >= %s THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN a.status = %s AND a.submitted_at >= %s THEN a.total_time_ms"
            "  ELSE 0 END),"
            f" SUM(CASE WHEN a.status = %s AND a.submitted_at >= %s THEN {rated} ELSE 0 END),"
            # Rejections of their work lately (``my_recent_rejections`` reads them if any).
            " (SELECT COUNT(*) FROM labeling_review r"
            "  JOIN labeling_assignment ra ON ra.id = r.assignment_id"
            "  WHERE ra.campaign_id = a.campaign_id AND ra.annotator_id = %s"
            "  AND r.decision = %s AND r.created_at >= %s)"
            " FROM labeling_assignment a JOIN labeling_solution s ON s.id = a.solution_id"
            f" WHERE a.annotator_id = %s AND a.campaign_id IN ({marks})"
            " GROUP BY a.campaign_id",
            [
                Solution.Kind.REGULAR,
                Solution.Kind.REGULAR,
                *[x for pk in ids for x in (pk, adapt(kept[pk].counted_at))],
                *Assignment.DONE_STATUSES,
                adapt(today),
                *Assignment.DONE_STATUSES,
                adapt(today),
                Solution.Kind.REGULAR,
                Assignment.Status.SUBMITTED,
                *Assignment.RELEASING_REASONS,
                *[x for pk in ids for x in (pk, adapt(kept[pk].counted_at))],
                Assignment.Status.SUBMITTED,
                *Assignment.RELEASING_REASONS,
                *[x for pk in ids for x in (pk, overlap[pk])],
                *[Assignment.Status.SUBMITTED, adapt(since)] * 3,
                user.pk,
                Review.Decision.REJECTED,
                adapt(rejections_since),
                user.pk,
                *ids,
            ],
        )
        rows = {row[0]: row[1:] for row in cursor.fetchall()}
    figures = {}
    for pk, count in kept.items():
        had_open, closed_since, solutions, steps, completed, *session, rejected = rows.get(
            pk, (0,) * 9
        )
        in_session, time_ms, steps_in_session = (int(x or 0) for x in session)
        figures[pk] = MyFigures(
            left=max(count.open - had_open - closed_since, 0),
            solutions_today=int(solutions or 0),
            steps_today=int(steps or 0),
            done=min(count.done + completed, count.wanted),
            wanted=count.wanted,
            session=SessionWork(
                since=since, solutions=in_session, steps=steps_in_session, time_ms=time_ms
            ),
            rejected_recently=int(rejected or 0),
        )
    return figures


def my_recent_rejections(*, campaign: Campaign, user) -> list[dict[str, Any]]:
    """The annotator's work rejected in the last ``REJECTIONS_SHOWN_DAYS``, newest first (at most
    ``REJECTIONS_SHOWN``): assignment id, comment, problem excerpt, when. Never who reviewed.
    The labelling page asks only when ``MyFigures.rejected_recently`` says there are some."""
    since = timezone.now() - timedelta(days=REJECTIONS_SHOWN_DAYS)
    rows = (
        Review.objects.filter(
            assignment__campaign=campaign,
            assignment__annotator=user,
            decision=Review.Decision.REJECTED,
            created_at__gte=since,
        )
        .order_by("-created_at", "-id")
        .values(
            "assignment_id",
            "comment",
            "created_at",
            problem=Left("assignment__solution__problem__text", 120),
        )[:REJECTIONS_SHOWN]
    )
    return [dict(row) for row in rows]


def qc_first_error_missed(*, assignment_id: int, user) -> bool:
    """After the annotator submitted ``assignment_id``: True when it was a quality-control
    question with a gold error, they rated it to the end (or to an error) and their first -1
    was not on the gold's. Only their own submitted work
    is read, and only for the notice after submission (the page never says a solution is QC
    before)."""
    assignment = (
        Assignment.objects.filter(
            pk=assignment_id,
            annotator=user,
            status=Assignment.Status.SUBMITTED,
            solution__kind=Solution.Kind.QUALITY_CONTROL,
            # A give-up or a bad-problem report judged no solution: nothing was missed.
            finish_reason__in=(FinishReason.SOLUTION, FinishReason.FOUND_ERROR),
        )
        .values("solution_id")
        .first()
    )
    if assignment is None:
        return False
    gold = list(
        Step.objects.filter(solution_id=assignment["solution_id"])
        .order_by("index")
        .values_list("index", "gold_rating")
    )
    ratings: dict[int, int] = {
        index: rating
        for index, rating in StepLabel.objects.filter(
            assignment_id=assignment_id, rating__isnull=False
        ).values_list("step__index", "rating")
        if rating is not None
    }
    return first_error_found(gold, ratings) is False


@dataclass(frozen=True)
class CampaignCounts:
    """A campaign's counts that the labelling page shows, as counted at ``counted_at``: how far
    it is, ``done`` (regular solutions with ``overlap`` submitted labellings: give-ups and bad
    problem reports release their slot, so they do not count; leases in progress do not either,
    the dashboard's "done" counts them: it plans, this page reports) of ``wanted`` (all regular
    ones), and ``open`` (regular solutions the queue may still serve)."""

    done: int
    wanted: int
    open: int
    counted_at: datetime


def campaign_counts(*, campaign: Campaign) -> CampaignCounts:
    """The campaign's ``CampaignCounts``, kept rather than counted on each page.

    They are counts over the whole campaign, which grow with it, and the labelling page shows
    them on every solution: so they are counted at most once every ``STEPWISE_PROGRESS_SECONDS``
    per campaign and read from the cache in between; what an annotator did since is added to
    them for that annotator (``my_figures``).
    """
    key = _counts_key(campaign)
    cached = cache.get(key)
    if cached is not None:
        return CampaignCounts(*cached)
    counts = campaign_counts_counted(campaign=campaign)
    cache.set(key, _cached(counts), settings.STEPWISE_PROGRESS_SECONDS)
    return counts


def _counts_key(campaign: Campaign) -> str:
    return f"labeling:counts:{campaign.pk}:{campaign.overlap}"


def _cached(counts: CampaignCounts) -> tuple[int, int, int, datetime]:
    return (counts.done, counts.wanted, counts.open, counts.counted_at)


def campaign_counts_counted(*, campaign: Campaign) -> CampaignCounts:
    """``campaign_counts`` counted now (three counts over the campaign; ``open`` reads the
    queue's partial index ``solution_queue`` only)."""
    counted_at = timezone.now()
    regular = Solution.objects.filter(campaign=campaign, kind=Solution.Kind.REGULAR)
    wanted = regular.count()
    open_ = regular.filter(is_open=True, archived=False).count()
    done = (
        Assignment.objects.filter(
            campaign=campaign,
            status=Assignment.Status.SUBMITTED,
            solution__kind=Solution.Kind.REGULAR,
        )
        .exclude(finish_reason__in=Assignment.RELEASING_REASONS)
        .order_by()
        .values("solution")
        .annotate(n=Count("id"))
        .filter(n__gte=campaign.overlap)
        .count()
    )
    return CampaignCounts(done=done, wanted=wanted, open=open_, counted_at=counted_at)


# --- Active learning (the manager's page) ----------------------------------------------------


def my_reviews(*, campaign: Campaign, user, page: int = 1, per_page: int = 50) -> tuple[list, bool]:
    """A page of the annotator's reviewed work, newest review first: outcome, comment and
    corrected ratings. Says nothing about who reviewed, the solution's kind or others' labels."""
    start = (max(page, 1) - 1) * per_page
    reviews = list(
        Review.objects.filter(assignment__campaign=campaign, assignment__annotator=user)
        .order_by("-created_at", "-id")
        .values(
            "assignment_id",
            "decision",
            "comment",
            "corrections",
            "created_at",
            submitted_at=F("assignment__submitted_at"),
            problem=Left("assignment__solution__problem__text", 200),
        )[start : start + per_page + 1]
    )
    has_next = len(reviews) > per_page
    reviews = reviews[:per_page]
    corrected = [r["assignment_id"] for r in reviews if r["corrections"]]
    mine: dict[tuple[int, int], int | None] = {
        (a, i): rating
        for a, i, rating in StepLabel.objects.filter(assignment_id__in=corrected).values_list(
            "assignment_id", "step__index", "rating"
        )
    }
    for r in reviews:
        r["reviewed_at"] = r.pop("created_at")
        r["corrections"] = [
            {"step": int(i) + 1, "yours": mine.get((r["assignment_id"], int(i))), "corrected": v}
            for i, v in sorted(r["corrections"].items(), key=lambda kv: int(kv[0]))
        ]
    return reviews, has_next


# --- An annotator's own history ----------------------------------------------------------------


def my_work(*, campaign: Campaign, user, page: int = 1, per_page: int = 50) -> tuple[list, bool]:
    """A page of the annotator's submitted work, newest first: their ratings, the review's
    outcome and comment. One row per solution they finished (the latest version of amended
    work). Never another annotator's labels, gold ratings, the solution's kind or the reviewer."""
    start = (max(page, 1) - 1) * per_page
    rows = list(
        Assignment.objects.filter(
            campaign=campaign, annotator=user, status__in=Assignment.DONE_STATUSES
        )
        .order_by("-submitted_at", "-id")
        .values(
            "id",
            "solution_id",
            "status",
            "submitted_at",
            "finish_reason",
            "supersedes_id",
            decision=F("review__decision"),
            comment=F("review__comment"),
            problem=Left("solution__problem__text", 200),
        )[start : start + per_page + 1]
    )
    has_next = len(rows) > per_page
    rows = rows[:per_page]
    ratings: dict[int, list[int | None]] = {row["id"]: [] for row in rows}
    for assignment_id, rating in (
        StepLabel.objects.filter(assignment_id__in=list(ratings))
        .order_by("assignment_id", "step__index")
        .values_list("assignment_id", "rating")
    ):
        ratings[assignment_id].append(rating)
    for row in rows:
        row["ratings"] = ratings[row["id"]]
    return rows, has_next


@dataclass(frozen=True)
class MyWorkItem:
    """One version of the annotator's work on a solution, as they rated it, and its review."""

    assignment: Assignment
    view: AssignmentView
    review: dict | None  # decision, comment, corrections (step index -> rating); no reviewer
    versions: list[dict]  # every version of their work on this solution, oldest first
    can_amend: bool


def my_work_item(*, campaign: Campaign, user, assignment_id: int) -> MyWorkItem | None:
    """The annotator's own finished work (any version), read-only; None if it is not theirs.

    Built on ``assignment_view``, whose label join is on this assignment alone: another
    annotator's labels and gold ratings cannot come along.
    """
    statuses = (*Assignment.DONE_STATUSES, Assignment.Status.SUPERSEDED)
    assignment = (
        Assignment.objects.filter(
            pk=assignment_id, campaign=campaign, annotator=user, status__in=statuses
        )
        .select_related("solution")
        .first()
    )
    if assignment is None:
        return None
    assignment.campaign = campaign
    review = (
        Review.objects.filter(assignment=assignment)
        .values("decision", "comment", "corrections", "created_at")
        .first()
    )
    versions = list(
        Assignment.objects.filter(
            campaign=campaign,
            annotator=user,
            solution_id=assignment.solution_id,
            status__in=statuses,
        )
        .order_by("submitted_at", "id")
        .values("id", "status", "submitted_at", "supersedes_id")
    )
    return MyWorkItem(
        assignment=assignment,
        view=assignment_view(assignment=assignment),
        review=review,
        versions=versions,
        can_amend=(
            assignment.status == Assignment.Status.SUBMITTED
            and review is None
            and assignment.solution.kind != Solution.Kind.SCREENING
        ),
    )

"""What the labelling page and the API show an annotator of one assignment: reads only.

Never gold ratings, other annotators' labels or whether a solution is a quality-control question
(before it was submitted): the queries select only the columns that may be shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Min
from django.db.models.functions import Left
from django.utils import timezone

from labeling.gold.scores import first_error_found
from labeling.models import (
    Assignment,
    Campaign,
    FinishReason,
    Membership,
    Rating,
    Review,
    Solution,
    Step,
    StepLabel,
)
from labeling.queue import (
    MembershipInactive,
    NotLeaseHolder,
    human_completion_load,
    model_columns,
    model_from_row,
)
from labeling.selectors.home import REJECTIONS_SHOWN, REJECTIONS_SHOWN_DAYS


@dataclass(frozen=True)
class StepView:
    index: int
    text: str
    # A trajectory's turn, structured (``Step.content``); None for a math step.
    content: dict[str, Any] | None = None


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
    # What the campaign labels (``labeling.traces``) and, for a trajectory, its conversation
    # (``Solution.trace``: the context shown above the steps).
    trace_kind: str = "math"
    trace: dict[str, Any] | None = None
    outcome_rating: int | None = None


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
            "SELECT s.kind, p.text, p.ground_truth_answer, s.trace,"
            ' st."index", st.text, l.rating, l.flagged, l.human_completion, l.time_spent_ms,'
            " st.content"
            " FROM labeling_solution s JOIN labeling_problem p ON p.id = s.problem_id"
            " LEFT JOIN labeling_step st ON st.solution_id = s.id"
            " LEFT JOIN labeling_steplabel l ON l.step_id = st.id AND l.assignment_id = %s"
            ' WHERE s.id = %s ORDER BY st."index"',
            [assignment.pk, assignment.solution_id],
        )
        rows = cursor.fetchall()
    kind, problem, answer, trace = rows[0][:4]
    steps, labels = [], []
    for *_, index, text, rating, flagged, correction, ms, content in rows:
        if index is None:  # a solution without steps: its one row has no step
            continue
        steps.append(StepView(index=index, text=text, content=json_value(content)))
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
        trace_kind=campaign.trace_kind,
        trace=json_value(trace),
        outcome_rating=assignment.outcome_rating,
    )


def json_value(value: Any) -> Any:
    """A JSON column read with plain SQL: text (SQLite, and PostgreSQL as Django sets psycopg
    up) or already parsed."""
    return json.loads(value) if isinstance(value, str | bytes) else value


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


def paused_campaign_for(*, user, slug: str) -> Campaign | None:
    """The campaign ``slug`` if the user's membership of it is paused (the labelling page tells
    them why there instead of answering 404, as for a campaign they are not in)."""
    membership = (
        Membership.objects.filter(user=user, campaign__slug=slug, status=Membership.Status.PAUSED)
        .select_related("campaign")
        .first()
    )
    return membership.campaign if membership else None


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


def qc_first_error_missed(*, assignment_id: int, user) -> str | None:
    """After the annotator submitted ``assignment_id``: how they missed the first error of a
    quality-control question with a gold error that they rated to the end (or to an error):
    ``"no_negative"`` when they rated no step −1, ``"elsewhere"`` when their first −1 was not on
    the gold's; None when nothing was missed. Only their own submitted work is read, and only
    for the notice after submission (the page never says a solution is QC before)."""
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
        return None
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
    if first_error_found(gold, ratings) is not False:
        return None
    return "elsewhere" if Rating.NEGATIVE in ratings.values() else "no_negative"

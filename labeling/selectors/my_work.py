"""What My work shows an annotator: their finished work, each version of it, and its reviews.

Never who reviewed, the solution's kind or another annotator's labels.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F
from django.db.models.functions import Left

from labeling.models import Assignment, Campaign, Review, Solution, StepLabel
from labeling.selectors.labelling import AssignmentView, assignment_view


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

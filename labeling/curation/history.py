"""A solution's history for the data browser's item page: the queue's work, reviews, and what
managers did (``SolutionEvent``), oldest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from labeling.models import (
    Assignment,
    FinishReason,
    Membership,
    Review,
    Solution,
    SolutionEvent,
)


@dataclass(frozen=True)
class HistoryEntry:
    at: datetime
    what: str  # served, skipped, submitted, expired, reviewed, requeued, archived, ...
    who: str
    detail: str = ""


# Statuses of work that was submitted once: still standing, rejected later, or amended since.
SUBMITTED_ONCE = (
    Assignment.Status.SUBMITTED,
    Assignment.Status.REJECTED,
    Assignment.Status.SUPERSEDED,
)


def solution_history(*, solution: Solution) -> list[HistoryEntry]:
    """What happened to a solution, oldest first: the queue's work (served, skipped, submitted,
    a lease that expired), reviews, and what managers did (``SolutionEvent``)."""
    entries: list[HistoryEntry] = []
    assignments = Assignment.objects.filter(solution=solution).select_related("annotator")
    imported = set(
        Membership.objects.filter(
            campaign_id=solution.campaign_id,
            is_imported=True,
            user__in=Assignment.objects.filter(solution=solution).values("annotator_id"),
        ).values_list("user_id", flat=True)
    )

    def name(user) -> str:
        return Membership.short_name(user.get_username(), imported=user.pk in imported)

    for a in assignments:
        who = name(a.annotator)
        if a.supersedes_id is not None:
            # An amendment is a new row copying its original's lease: the serving is the
            # original's; this row is the moment the work changed.
            when = a.submitted_at or a.leased_at
            entries.append(HistoryEntry(when, "amended", who, FinishReason.words(a.finish_reason)))
            continue
        entries.append(HistoryEntry(a.leased_at, "served", who))
        if a.status == Assignment.Status.SKIPPED:
            entries.append(HistoryEntry(a.submitted_at or a.leased_at, "skipped", who))
        elif a.status == Assignment.Status.EXPIRED:
            entries.append(HistoryEntry(a.lease_expires_at or a.leased_at, "lease expired", who))
        elif a.status in SUBMITTED_ONCE:
            when = a.submitted_at or a.leased_at
            entries.append(
                HistoryEntry(when, "submitted", who, FinishReason.words(a.finish_reason))
            )
    reviews = Review.objects.filter(assignment__solution=solution).select_related(
        "reviewer", "assignment__annotator"
    )
    for r in reviews:
        detail = f"{r.decision} the work of {name(r.assignment.annotator)}"
        entries.append(HistoryEntry(r.created_at, "reviewed", r.reviewer.get_username(), detail))
    for e in SolutionEvent.objects.filter(solution=solution).select_related("actor"):
        who = e.actor.get_username() if e.actor else "system"
        detail = ", ".join(f"{k}: {v}" for k, v in e.detail.items())
        entries.append(HistoryEntry(e.created_at, e.get_action_display(), who, detail))
    # Stable: at equal times served stays before submitted.
    entries.sort(key=lambda e: e.at)
    return entries

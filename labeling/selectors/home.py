"""What Home shows an annotator: their campaigns, pauses and figures, which the labelling page's
head shows too for one campaign (what is left, today, this session, recent rejections).

The figures grow with the annotator's own work, never with a campaign: the campaign's counts
are kept (``campaign_counts``) and what the annotator did since is added to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Subquery
from django.utils import timezone

from labeling.models import Assignment, Campaign, Membership, Review, Solution
from labeling.permissions import campaigns_visible_to


def campaigns_progress(*, user):
    """The user's campaigns (``campaigns_visible_to``) for their home page, each annotated with
    ``in_progress`` (they hold a live lease), ``role`` (None for a site admin who is not a
    member) and their screening state and score (``my_screening``, ``my_screening_score``). One
    query, whatever the number of campaigns; what is left for them and what they did today are
    ``my_figures`` (the labelling page shows the same)."""
    mine = Assignment.objects.filter(campaign=OuterRef("pk"), annotator=user)
    membership = Membership.objects.filter(campaign=OuterRef("pk"), user=user)
    return campaigns_visible_to(user).annotate(
        in_progress=Exists(mine.live_leases(timezone.now())),
        role=Subquery(membership.values("role")[:1]),
        my_screening=Subquery(membership.values("screening")[:1]),
        my_screening_score=Subquery(membership.values("screening_score")[:1]),
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
    # Steps done in a submission: rated ones, and phase 1's steps the annotator wrote (stored
    # as a correction with no rating of their own).
    rated = (
        "(SELECT COUNT(*) FROM labeling_steplabel l WHERE l.assignment_id = a.id"
        " AND (l.rating IS NOT NULL OR l.human_completion IS NOT NULL))"
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
            # The session: submissions since it began, their measured time and rated steps,
            # counted as today's are (rejected work was submitted all the same).
            f" SUM(CASE WHEN a.status IN ({done}) AND a.submitted_at >= %s THEN 1 ELSE 0 END),"
            f" SUM(CASE WHEN a.status IN ({done}) AND a.submitted_at >= %s THEN a.total_time_ms"
            "  ELSE 0 END),"
            f" SUM(CASE WHEN a.status IN ({done}) AND a.submitted_at >= %s THEN {rated}"
            " ELSE 0 END),"
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
                *[*Assignment.DONE_STATUSES, adapt(since)] * 3,
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

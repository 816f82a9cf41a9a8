"""Serving work: which solution an annotator labels next, and the claim that leases it."""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import OperationalError, connection, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from labeling.columns import ASSIGNMENT
from labeling.models import Assignment, Campaign, Membership, Solution
from labeling.queue.errors import CampaignPaused
from labeling.queue.leases import RECLAIM_BATCH, leases_reclaim
from labeling.queue.screening import may_work_check, membership_lock, screening_evaluate
from labeling.queue.shared import model_columns, model_fetch

# Each process probes a campaign for expired leases at most this often before a claim (the probe
# is cheap, but it is one more query on the hottest path). Before answering "no work" it always
# reclaims, so this only delays an expired high-priority solution by up to this long.
RECLAIM_EVERY_SECONDS = 1.0
_reclaimed_at: dict[int, float] = {}


def assignment_next(*, campaign: Campaign, annotator: AbstractBaseUser) -> Assignment | None:
    """Lease the annotator's next solution in this campaign, or None when there is none for them.

    In order: (1) an unexpired lease they already hold (a reload or a crash resumes it);
    (2) screening solutions, in queue order, while the campaign requires screening and they have
    not passed it; (3) a quality-control solution they have not done, when it is their turn at
    the campaign's rate (``qc_turn``); (4) the open regular solution with the highest priority
    (ties: oldest first) that they have not labelled or skipped (work of theirs that a reviewer
    rejected counts as labelled, unless the campaign has ``relabel_by_same_annotator``). Raises
    a ``LabelingError`` when the campaign is paused, the membership is not active or the
    annotator failed screening.
    """
    if campaign.is_paused:
        raise CampaignPaused()
    clock = time.monotonic()
    if clock - _reclaimed_at.get(campaign.pk, -math.inf) >= RECLAIM_EVERY_SECONDS:
        _reclaimed_at[campaign.pk] = clock
        leases_reclaim(campaign=campaign, limit=RECLAIM_BATCH)
    assignment = _assignment_next_attempts(campaign=campaign, annotator=annotator)
    if assignment is None and leases_reclaim(campaign=campaign, limit=None):
        # Expired leases were still hiding free slots: look once more before saying "no work".
        assignment = _assignment_next_attempts(campaign=campaign, annotator=annotator)
    if assignment is None:
        # Screening may have just failed (the outcome is committed by now): say so.
        membership = Membership.objects.get(campaign=campaign, user=annotator)
        may_work_check(campaign=campaign, membership=membership)
        return None
    assignment.campaign = campaign  # callers show it; saves them a query
    return assignment


class _WaitForLockedRows(Exception):
    """The SKIP LOCKED claim found nothing free: try again, waiting for the rows it skipped."""


def _assignment_next_attempts(*, campaign: Campaign, annotator) -> Assignment | None:
    """``_assignment_next_once``, first skipping locked rows, then waiting for them.

    The waiting claim runs in a fresh transaction. A locking read can keep a lock on a row that
    it then rejects (the row changed under it and no longer qualifies); if the skipping attempt's
    transaction went on to wait for an earlier row in the queue while keeping such a lock on a
    later one, two annotators could wait for each other. Claims that wait take their locks in
    queue order, so they cannot. A deadlock that still happens (the queue reordered by a
    concurrent priority rewrite) is retried; PostgreSQL has already rolled one side back.
    """
    for attempt in range(3):
        try:
            try:
                return _assignment_next_once(campaign=campaign, annotator=annotator, wait=False)
            except _WaitForLockedRows:
                return _assignment_next_once(campaign=campaign, annotator=annotator, wait=True)
        except OperationalError as error:
            if attempt == 2 or getattr(error.__cause__, "sqlstate", None) != "40P01":
                raise
    raise AssertionError("unreachable")


def _assignment_next_once(*, campaign: Campaign, annotator, wait: bool) -> Assignment | None:
    now = timezone.now()
    with transaction.atomic():
        membership = membership_lock(campaign_id=campaign.pk, annotator=annotator)
        may_work_check(campaign=campaign, membership=membership)
        # A statement of its own, after the lock: the locking statement's snapshot predates the
        # wait, so it would miss a lease that a concurrent request of theirs just committed.
        live = assignment_live(campaign=campaign, annotator=annotator, now=now)
        if live is not None:
            return live
        assignment = None
        if campaign.requires_screening and membership.screening != Membership.Screening.PASSED:
            assignment = _claim(
                campaign=campaign, annotator=annotator, kind=Solution.Kind.SCREENING, now=now
            )
            if assignment is None:
                state = screening_evaluate(campaign=campaign, membership=membership)
                if state == Membership.Screening.FAILED:
                    # Refused after the commit below, so the outcome is kept.
                    return None
        if (
            assignment is None
            and campaign.qc_rate > 0
            and qc_turn(campaign=campaign, annotator=annotator)
        ):
            assignment = _claim(
                campaign=campaign,
                annotator=annotator,
                kind=Solution.Kind.QUALITY_CONTROL,
                now=now,
            )
        if assignment is None:
            assignment = _claim(
                campaign=campaign,
                annotator=annotator,
                kind=Solution.Kind.REGULAR,
                now=now,
                wait=wait,
            )
        return assignment


# The annotator's live lease in the campaign (``Assignment.live_lease_q``, in plain SQL).
_LIVE_SQL = (
    f"SELECT {model_columns(Assignment)} FROM labeling_assignment"
    " WHERE campaign_id = %s AND annotator_id = %s AND "
    + Assignment.live_lease_sql()
    + " ORDER BY leased_at LIMIT 1"
)


def assignment_live(*, campaign: Campaign, annotator, now: datetime) -> Assignment | None:
    """The annotator's live lease here, served again before anything new (one indexed probe in
    plain SQL; the rules test holds it to ``Assignment.live_lease_q``)."""
    return model_fetch(Assignment, _LIVE_SQL, [campaign.pk, annotator.pk, now])


def qc_turn(*, campaign: Campaign, annotator: AbstractBaseUser) -> bool:
    """Whether the annotator's next solution should be a quality-control one.

    The rate is exact and the turn is not guessable. With ``n`` regular and QC solutions
    served so far, the positions are cut into blocks holding one QC solution each at the
    campaign's rate (block ``floor(n * rate)``: at 0.25, positions 0-3, 4-7, ...), and within
    each block the QC position is drawn from a keyed hash of the site's secret, the campaign,
    the annotator and the block: stable for one annotator (a reload changes nothing), different
    between annotators and blocks, and unknown to them. When no QC solution is left for them, a
    regular one is served.
    """
    rate = campaign.qc_rate
    if rate <= 0:
        return False
    served = (
        Assignment.objects.filter(
            campaign=campaign,
            annotator=annotator,
            solution__kind__in=[Solution.Kind.REGULAR, Solution.Kind.QUALITY_CONTROL],
        )
        # An amendment is a second row for one solution served once.
        .exclude(status=Assignment.Status.SUPERSEDED)
        .count()
    )
    start, length = _qc_block(served, rate)
    return served == start + _qc_draw(campaign.pk, annotator.pk, _qc_count(served, rate), length)


def _qc_count(n: int, rate: float) -> int:
    # The epsilon keeps e.g. 100 * 0.29 = 28.999999999999996 on the right side of the floor.
    return math.floor(n * rate + 1e-9)


def _qc_block(n: int, rate: float) -> tuple[int, int]:
    """(first position, length) of the block of positions holding position ``n``."""
    block = _qc_count(n, rate)

    def first(b: int) -> int:
        m = max(0, math.ceil(b / rate) - 1)
        while _qc_count(m, rate) < b:
            m += 1
        while m > 0 and _qc_count(m - 1, rate) >= b:
            m -= 1
        return m

    start = first(block)
    return start, max(1, first(block + 1) - start)


def _qc_draw(campaign_id: int, user_id: int, block: int, length: int) -> int:
    key = hashlib.sha256(f"qc-turn:{settings.SECRET_KEY}".encode()).digest()
    digest = hmac.new(key, f"{campaign_id}:{user_id}:{block}".encode(), "sha256").digest()
    return int.from_bytes(digest[:8], "big") % length


def _claim(
    *, campaign: Campaign, annotator, kind: str, now: datetime, wait: bool = False
) -> Assignment | None:
    """Lease the first open solution of ``kind`` the annotator has not had; None when none is left.

    On PostgreSQL a regular claim first skips rows other claims hold locked and raises
    ``_WaitForLockedRows`` when that finds nothing; with ``wait`` it waits for them instead. An
    annotator has at most one live assignment per solution: a solution whose lease they let
    expire comes back to them on the same row, with their drafts. Their earlier versions of
    amended work (``superseded``) never keep a solution from them (the latest version does), nor,
    with ``relabel_by_same_annotator``, their rejected work (a new row is leased beside it).
    """
    expires = now + campaign.lease_duration
    if connection.vendor == "postgresql":
        return _claim_postgresql(
            campaign=campaign, annotator=annotator, kind=kind, now=now, expires=expires, wait=wait
        )
    # SQLite: the same three steps as the statement below, safe because the transaction holds
    # the database's write lock from its start (BEGIN IMMEDIATE).
    mine = Assignment.objects.filter(solution=OuterRef("pk"), annotator=annotator)
    row = (
        claim_candidates(campaign=campaign, annotator=annotator, kind=kind)
        .annotate(
            expired_id=Subquery(mine.filter(status=Assignment.Status.EXPIRED).values("pk")[:1])
        )
        .values_list("pk", "expired_id")
        .first()
    )
    if row is None:
        return None
    solution_id, expired_id = row
    Solution.objects.filter(pk=solution_id).slots_change(campaign=campaign, slots=1)
    if expired_id is not None:
        Assignment.objects.filter(pk=expired_id).update(
            status=Assignment.Status.LEASED, leased_at=now, lease_expires_at=expires
        )
        return Assignment.objects.get(pk=expired_id)
    return Assignment.objects.create(
        campaign=campaign,
        solution_id=solution_id,
        annotator=annotator,
        status=Assignment.Status.LEASED,
        leased_at=now,
        lease_expires_at=expires,
    )


def claim_candidates(*, campaign: Campaign, annotator, kind: str):
    """The solutions a claim may lease to the annotator, in queue order: open and not archived
    (the partial index ``solution_queue``), of ``kind``, and not had by them (``_may_serve_again``).

    The ORM form of ``CANDIDATES_SQL``, which PostgreSQL's one-statement claim runs;
    tests/test_rules_claim_sql.py holds the two to the same rows in the same order.
    """
    mine = Assignment.objects.filter(solution=OuterRef("pk"), annotator=annotator)
    return (
        Solution.objects.filter(campaign=campaign, kind=kind, is_open=True, archived=False)
        .filter(~Exists(mine.exclude(status__in=_may_serve_again(campaign))))
        .order_by("-priority", "pk")
    )


def _may_serve_again(campaign: Campaign) -> tuple[str, ...]:
    """Statuses of an annotator's own assignment that do not keep a solution from them."""
    statuses = (Assignment.Status.EXPIRED, Assignment.Status.SUPERSEDED)
    if campaign.relabel_by_same_annotator:
        statuses += (Assignment.Status.REJECTED,)
    return statuses


# ``claim_candidates`` in SQL: rows of the partial index ``solution_queue``, in its order. Its
# condition (``is_open AND NOT archived``) must be implied here, or PostgreSQL cannot read the
# index and the claim's cost grows with the campaign.
CANDIDATES_SQL = """
    FROM labeling_solution s
    WHERE s.campaign_id = %(campaign)s AND s.kind = %(kind)s AND s.is_open AND NOT s.archived
      AND NOT EXISTS (SELECT 1 FROM labeling_assignment a
                      WHERE a.solution_id = s.id AND a.annotator_id = %(annotator)s
                        AND a.status <> ALL(%(serve_again)s))
    ORDER BY s.priority DESC, s.id
"""
# The claim on PostgreSQL, in one round trip: pick the first candidate (the cost does not grow
# with the queue), lock it, take a slot (the arithmetic of ``SolutionQuerySet.slots_change``,
# held to it by tests/test_rules_claim_sql.py), and lease it: a new assignment (its columns:
# ``labeling.columns.ASSIGNMENT``), or the annotator's own expired one again, drafts and all.
_CLAIM_SQL = (
    """
WITH cand AS (
    SELECT s.id,
           (SELECT a.id FROM labeling_assignment a
            WHERE a.solution_id = s.id AND a.annotator_id = %(annotator)s
              AND a.status = 'expired' LIMIT 1) AS expired_id"""
    + CANDIDATES_SQL
    + """    LIMIT 1
    {lock}
), taken AS (
    UPDATE labeling_solution s
    SET assignment_count = s.assignment_count + 1,
        is_open = (s.kind <> 'regular' OR s.assignment_count + 1 < %(overlap)s + s.extra_labels)
                  AND s.bad_problem_reports < %(bad_problem_limit)s AND NOT s.archived
    FROM cand WHERE s.id = cand.id
), renewed AS (
    UPDATE labeling_assignment a
    SET status = 'leased', leased_at = %(now)s, lease_expires_at = %(expires)s
    FROM cand WHERE a.id = cand.expired_id
    RETURNING a.*
), created AS (
    INSERT INTO labeling_assignment ("""
    + ASSIGNMENT.sql(
        "campaign_id",
        "solution_id",
        "annotator_id",
        "status",
        "leased_at",
        "lease_expires_at",
        "finish_reason",
        "source",
    )
    + """)
    SELECT %(campaign)s, cand.id, %(annotator)s, 'leased', %(now)s, %(expires)s, '', ''
    FROM cand WHERE cand.expired_id IS NULL
    RETURNING *
)
SELECT {columns} FROM renewed UNION ALL SELECT {columns} FROM created
"""
)
# The claimed row in ``model_columns`` order, for ``model_fetch``.
_COLUMNS = model_columns(Assignment)
CLAIM_SKIP_LOCKED = _CLAIM_SQL.format(lock="FOR NO KEY UPDATE OF s SKIP LOCKED", columns=_COLUMNS)
_CLAIM_WAIT = _CLAIM_SQL.format(lock="FOR NO KEY UPDATE OF s", columns=_COLUMNS)
# Gold solutions are served to everyone: nothing to race for but the counter (the UPDATE waits).
_CLAIM_GOLD = _CLAIM_SQL.format(lock="", columns=_COLUMNS)


def claim_params(
    *, campaign: Campaign, annotator_id: int, kind: str, now: datetime
) -> dict[str, object]:
    """The parameters of the claim statements (and of ``CANDIDATES_SQL``). The queue benchmark
    runs ``CLAIM_SKIP_LOCKED`` with them straight from psycopg, as the ceiling of the app."""
    return {
        "campaign": campaign.pk,
        "annotator": annotator_id,
        "kind": kind,
        "overlap": campaign.overlap,
        "bad_problem_limit": campaign.bad_problem_limit,
        "now": now,
        "expires": now + campaign.lease_duration,
        "serve_again": list(_may_serve_again(campaign)),
    }


def _claim_postgresql(
    *, campaign: Campaign, annotator, kind: str, now: datetime, expires: datetime, wait: bool
) -> Assignment | None:
    params = claim_params(campaign=campaign, annotator_id=annotator.pk, kind=kind, now=now)
    params["expires"] = expires
    if kind != Solution.Kind.REGULAR:
        return model_fetch(Assignment, _CLAIM_GOLD, params)
    if wait:
        return model_fetch(Assignment, _CLAIM_WAIT, params)
    claimed = model_fetch(Assignment, CLAIM_SKIP_LOCKED, params)
    if claimed is None:
        # Rows skipped above may be locked by claims that leave a slot free: wait for them (in a
        # fresh transaction, see ``_assignment_next_attempts``), so nobody is told "no work"
        # while a slot is about to be free.
        raise _WaitForLockedRows()
    return claimed

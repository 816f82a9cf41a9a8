"""The work queue and the labelling workflow: what an annotator labels next, drafts, submission.

The JSON API (``labeling.api``) and the htmx labelling page both call these functions, so every
rule lives here once.

Slots. A solution wants ``campaign.overlap`` labels. An assignment holds one of its slots while it
is leased and after it is submitted (``Assignment.holds_slot``); ``Solution.assignment_count``
counts them and ``Solution.is_open`` says whether the queue may serve the solution. Every change
is a relative UPDATE (``SolutionQuerySet.slots_change``) in the same transaction as the change of
the assignment, so the counter never drifts.

Leases. A served solution is leased for ``campaign.lease_seconds``. An expired lease keeps its
slot until it is reclaimed: ``leases_reclaim`` marks it ``expired`` and releases the slot. Before
a claim the queue reclaims a few expired leases (an indexed probe, at most once a second per
process and campaign), all of them before it ever answers "no work", and a Celery beat task
sweeps every campaign once a minute. The holder of an expired lease may still submit (or keep
drafting): accepted if the slot is still free (it is taken again), refused with ``LeaseTaken``
if somebody else took it. Draft actions renew the lease, so an annotator who is working never
loses their solution.

Locks. Every write takes row locks in one order, so concurrent requests cannot deadlock: the
annotator's ``Membership`` row first (it serialises one person's requests: a double click cannot
lease two solutions, or one screening question twice), then ``Assignment`` rows, then
``Solution`` rows (in id order when there are several). Reclaiming runs in its own transaction,
before the claim's. On PostgreSQL the claim is one statement that reads the queue with
``SELECT ... FOR NO KEY UPDATE SKIP LOCKED`` on the partial index ``solution_queue``, so
concurrent annotators pass over each other's rows instead of queueing behind them, and its cost
does not depend on the number of solutions; only when that finds nothing does it wait on locked
rows, so nobody is told "no work" because another annotator was momentarily holding the last
free slot. ``NO KEY`` locks leave foreign-key checks of concurrent inserts unblocked. On SQLite,
writes are serialised (the settings open every transaction with ``BEGIN IMMEDIATE``), and the
claim runs as three ORM queries.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from labeling import events
from labeling.models import (
    Assignment,
    Campaign,
    FinishReason,
    Membership,
    Rating,
    Solution,
    Step,
    StepLabel,
)

# Expired leases reclaimed before a claim: enough to keep up with any realistic rate of
# abandoned work, few enough that the probe stays a short index range scan.
RECLAIM_BATCH = 50
# Each process probes a campaign for expired leases at most this often before a claim (the probe
# is cheap, but it is one more query on the hottest path). Before answering "no work" it always
# reclaims, so this only delays an expired high-priority solution by up to this long.
RECLAIM_EVERY_SECONDS = 1.0
_T = TypeVar("_T")
_reclaimed_at: dict[int, float] = {}

RATINGS = frozenset(Rating.values)


# The hot path (asking for work, submitting) reads with plain SQL: on the reference machine the
# ORM spends about 0.5 ms of CPU building each query, several times the query itself, and
# these run on every request of every annotator. Everything else uses the ORM.


def _for_update(*, of: str | None = None) -> str:
    """The row lock of a locking read on PostgreSQL; SQLite serialises writers instead.

    ``NO KEY UPDATE``: nothing here changes a key, so foreign-key checks of concurrent inserts
    (a new assignment of the solution, a label of the assignment) do not wait.
    """
    if connection.vendor != "postgresql":
        return ""
    return " FOR NO KEY UPDATE" + (f" OF {of}" if of else "")


def _first(rows: Iterable[_T]) -> _T | None:
    return next(iter(rows), None)


def human_completion_load(value) -> dict | None:
    """A ``StepLabel.human_completion`` value as read with plain SQL (text on some backends)."""
    return StepLabel._meta.get_field("human_completion").from_db_value(value, None, connection)


# --- Refusals -------------------------------------------------------------------------------


class LabelingError(Exception):
    """Why the queue refuses a request: ``code`` is for API clients, the text for people."""

    code = "refused"
    message = "This request was refused."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)

    @property
    def detail(self) -> str:
        return str(self)


class NotAMember(LabelingError):
    code = "not_a_member"
    message = "You are not a member of this campaign."


class CampaignPaused(LabelingError):
    code = "campaign_paused"
    message = "This campaign is paused: no new work is served until a manager resumes it."


class MembershipInactive(LabelingError):
    code = "membership_inactive"
    message = "Your membership of this campaign is not active; ask a campaign manager."


class ScreeningFailed(LabelingError):
    code = "screening_failed"
    message = (
        "You did not pass this campaign's screening, so it has no more work for you. "
        "Thank you for your time."
    )


class NotLeaseHolder(LabelingError):
    code = "not_lease_holder"
    message = "This assignment is not yours."


class LeaseTaken(LabelingError):
    code = "lease_taken"
    message = (
        "Your lease on this solution expired and another annotator has taken its place, "
        "so these labels cannot be accepted. Ask for the next solution."
    )


class AssignmentClosed(LabelingError):
    code = "assignment_closed"
    message = "This assignment is already finished."


class LabelsInvalid(LabelingError):
    """Input that breaks a labelling rule; ``field`` names the offending input."""

    code = "invalid"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


# --- Results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubmitResult:
    """What a submission did. A retry with the same submission key returns an equal result."""

    assignment_id: int
    solution_id: int
    status: str
    finish_reason: str
    submitted_at: datetime | None
    rated_steps: int
    # The membership's screening state after a screening submission; None for other solutions.
    screening: str | None
    replayed: bool = field(default=False, compare=False)


@dataclass
class _Label:
    """One step's label while a submission is assembled and checked."""

    index: int
    rating: int | None
    flagged: bool = False
    time_spent_ms: int | None = None
    human_completion: str | None = None


# --- Serving work -----------------------------------------------------------------------------


def assignment_next(*, campaign: Campaign, annotator: AbstractBaseUser) -> Assignment | None:
    """Lease the annotator's next solution in this campaign, or None when there is none for them.

    In order: (1) an unexpired lease they already hold (a reload or a crash resumes it);
    (2) screening solutions, in queue order, while the campaign requires screening and they have
    not passed it; (3) a quality-control solution they have not done, when it is their turn at
    the campaign's rate (``qc_turn``); (4) the open regular solution with the highest priority
    (ties: oldest first) that they have not labelled or skipped. Raises a ``LabelingError`` when
    the campaign is paused, the membership is not active or the annotator failed screening.
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
        _check_may_work(campaign=campaign, membership=membership)
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
        membership = _membership_lock(campaign_id=campaign.pk, annotator=annotator)
        _check_may_work(campaign=campaign, membership=membership)
        # A statement of its own, after the lock: the locking statement's snapshot predates the
        # wait, so it would miss a lease that a concurrent request of theirs just committed.
        live = _assignment_live(campaign=campaign, annotator=annotator, now=now)
        if live is not None:
            return live
        assignment = None
        if campaign.requires_screening and membership.screening != Membership.Screening.PASSED:
            assignment = _claim(
                campaign=campaign, annotator=annotator, kind=Solution.Kind.SCREENING, now=now
            )
            if assignment is None:
                state = _screening_evaluate(campaign=campaign, membership=membership)
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


def _assignment_live(*, campaign: Campaign, annotator, now: datetime) -> Assignment | None:
    return _first(
        Assignment.objects.raw(
            "SELECT * FROM labeling_assignment WHERE campaign_id = %s AND annotator_id = %s"
            " AND status = 'leased' AND lease_expires_at > %s ORDER BY leased_at LIMIT 1",
            [campaign.pk, annotator.pk, now],
        )
    )


def qc_turn(*, campaign: Campaign, annotator: AbstractBaseUser) -> bool:
    """Whether the annotator's next solution should be a quality-control one.

    Deterministic, so the rate is exact and testable: with ``n`` regular and QC solutions served
    so far, the next is QC when ``floor((n + 1) * rate) > floor(n * rate)``; at rate 0.25 that
    is the 4th, 8th, 12th... When no QC solution is left for them, a regular one is served.
    """
    served = Assignment.objects.filter(
        campaign=campaign,
        annotator=annotator,
        solution__kind__in=[Solution.Kind.REGULAR, Solution.Kind.QUALITY_CONTROL],
    ).count()
    rate = campaign.qc_rate
    # The epsilon keeps e.g. 100 * 0.29 = 28.999999999999996 on the right side of the floor.
    return math.floor((served + 1) * rate + 1e-9) > math.floor(served * rate + 1e-9)


def _claim(
    *, campaign: Campaign, annotator, kind: str, now: datetime, wait: bool = False
) -> Assignment | None:
    """Lease the first open solution of ``kind`` the annotator has not had; None when none is left.

    On PostgreSQL a regular claim first skips rows other claims hold locked and raises
    ``_WaitForLockedRows`` when that finds nothing; with ``wait`` it waits for them instead. An
    annotator has at most one assignment per solution: a solution whose lease they let
    expire comes back to them on the same row, with their drafts.
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
        Solution.objects.filter(campaign=campaign, kind=kind, is_open=True)
        .filter(~Exists(mine.exclude(status=Assignment.Status.EXPIRED)))
        .annotate(
            expired_id=Subquery(mine.filter(status=Assignment.Status.EXPIRED).values("pk")[:1])
        )
        .order_by("-priority", "pk")
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


# The claim on PostgreSQL, in one round trip: pick the first open solution of the kind that the
# annotator has not had (reading the partial index ``solution_queue``, so the cost does not grow
# with the queue), lock it, take a slot (the same arithmetic as ``SolutionQuerySet.slots_change``),
# and lease it: a new assignment, or the annotator's own expired one again, drafts and all.
_CLAIM_SQL = """
WITH cand AS (
    SELECT s.id,
           (SELECT a.id FROM labeling_assignment a
            WHERE a.solution_id = s.id AND a.annotator_id = %(annotator)s
              AND a.status = 'expired' LIMIT 1) AS expired_id
    FROM labeling_solution s
    WHERE s.campaign_id = %(campaign)s AND s.kind = %(kind)s AND s.is_open
      AND NOT EXISTS (SELECT 1 FROM labeling_assignment a
                      WHERE a.solution_id = s.id AND a.annotator_id = %(annotator)s
                        AND a.status <> 'expired')
    ORDER BY s.priority DESC, s.id
    LIMIT 1
    {lock}
), taken AS (
    UPDATE labeling_solution s
    SET assignment_count = s.assignment_count + 1,
        is_open = (s.kind <> 'regular' OR s.assignment_count + 1 < %(overlap)s)
                  AND s.bad_problem_reports < %(bad_problem_limit)s
    FROM cand WHERE s.id = cand.id
), renewed AS (
    UPDATE labeling_assignment a
    SET status = 'leased', leased_at = %(now)s, lease_expires_at = %(expires)s
    FROM cand WHERE a.id = cand.expired_id
    RETURNING a.*
), created AS (
    INSERT INTO labeling_assignment (campaign_id, solution_id, annotator_id, status, leased_at,
                                     lease_expires_at, finish_reason, source)
    SELECT %(campaign)s, cand.id, %(annotator)s, 'leased', %(now)s, %(expires)s, '', ''
    FROM cand WHERE cand.expired_id IS NULL
    RETURNING *
)
SELECT * FROM renewed UNION ALL SELECT * FROM created
"""
_CLAIM_SKIP_LOCKED = _CLAIM_SQL.format(lock="FOR NO KEY UPDATE OF s SKIP LOCKED")
_CLAIM_WAIT = _CLAIM_SQL.format(lock="FOR NO KEY UPDATE OF s")
# Gold solutions are served to everyone: nothing to race for but the counter (the UPDATE waits).
_CLAIM_GOLD = _CLAIM_SQL.format(lock="")


def _claim_postgresql(
    *, campaign: Campaign, annotator, kind: str, now: datetime, expires: datetime, wait: bool
) -> Assignment | None:
    params = {
        "campaign": campaign.pk,
        "annotator": annotator.pk,
        "kind": kind,
        "overlap": campaign.overlap,
        "bad_problem_limit": campaign.bad_problem_limit,
        "now": now,
        "expires": expires,
    }
    if kind != Solution.Kind.REGULAR:
        return next(iter(Assignment.objects.raw(_CLAIM_GOLD, params)), None)
    if wait:
        return next(iter(Assignment.objects.raw(_CLAIM_WAIT, params)), None)
    claimed = next(iter(Assignment.objects.raw(_CLAIM_SKIP_LOCKED, params)), None)
    if claimed is None:
        # Rows skipped above may be locked by claims that leave a slot free: wait for them (in a
        # fresh transaction, see ``_assignment_next_attempts``), so nobody is told "no work"
        # while a slot is about to be free.
        raise _WaitForLockedRows()
    return claimed


def leases_reclaim(
    *,
    campaign: Campaign | None = None,
    limit: int | None = RECLAIM_BATCH,
    now: datetime | None = None,
) -> int:
    """Release the slots of expired leases (status ``expired``); returns how many it released.

    Each batch runs in its own short transaction, takes the expired rows with ``SKIP LOCKED`` (a
    row that is locked is being submitted or reclaimed by someone else right now) and then
    locks their solutions in id order. ``limit=None`` repeats until none is left. ``campaign=None``
    sweeps every campaign (the Celery beat task).
    """
    now = now or timezone.now()
    expired = Assignment.objects.filter(status=Assignment.Status.LEASED, lease_expires_at__lte=now)
    if campaign is not None:
        expired = expired.filter(campaign=campaign)
    released = 0
    while True:
        batch = limit if limit is not None else 500
        # Cheap probe outside a transaction: nearly always there is nothing to reclaim.
        if not expired.exists():
            return released
        with transaction.atomic():
            rows = list(
                expired.order_by("lease_expires_at")
                .select_for_update(skip_locked=True, no_key=True)
                .values_list("pk", "solution_id", "campaign_id")[:batch]
            )
            if not rows:
                return released
            Assignment.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(
                status=Assignment.Status.EXPIRED
            )
            _slots_release(Counter((cid, sid) for _, sid, cid in rows))
        released += len(rows)
        if limit is not None or len(rows) < batch:
            return released


def _slots_release(counts: Counter) -> None:
    """Give back ``counts[(campaign_id, solution_id)]`` slots, locking the solutions in id order."""
    ids = sorted(sid for _, sid in counts)
    locks = Solution.objects.filter(pk__in=ids).order_by("pk").select_for_update(no_key=True)
    list(locks.values_list("pk"))
    campaigns = Campaign.objects.in_bulk({cid for cid, _ in counts})
    for (cid, sid), n in sorted(counts.items(), key=lambda item: item[0][1]):
        Solution.objects.filter(pk=sid).slots_change(campaign=campaigns[cid], slots=-n)


# --- Membership and screening ------------------------------------------------------------------


def _membership_lock(*, campaign_id: int, annotator) -> Membership:
    """Lock the annotator's membership row: it serialises that person's writes in the campaign."""
    membership = _first(
        Membership.objects.raw(
            "SELECT * FROM annotators_membership WHERE campaign_id = %s AND user_id = %s"
            + _for_update(),
            [campaign_id, annotator.pk],
        )
    )
    if membership is None:
        raise NotAMember()
    return membership


def _check_may_work(*, campaign: Campaign, membership: Membership) -> None:
    if not membership.is_active:
        raise MembershipInactive()
    if campaign.requires_screening and membership.screening == Membership.Screening.FAILED:
        raise ScreeningFailed()


def gold_agreement(
    *, gold: Iterable[tuple[int, int | None]], ratings: dict[int, int], stop_at_first_error: bool
) -> tuple[int, int]:
    """(agreeing steps, scored steps) of one solution's ratings against its gold ratings.

    ``gold`` is ``(step index, gold rating)`` in step order. A step with a gold rating is scored;
    with stop-at-first-error, steps after the first gold negative are not (nobody rates them).
    A scored step agrees when the annotator gave exactly the gold rating; an unrated one (they
    stopped early or gave up) disagrees.
    """
    agree = scored = 0
    for index, rating in gold:
        if rating is None:
            continue
        scored += 1
        agree += ratings.get(index) == rating
        if stop_at_first_error and rating == Rating.NEGATIVE:
            break
    return agree, scored


def _screening_evaluate(*, campaign: Campaign, membership: Membership) -> str:
    """Score the annotator once no screening solution is left for them; returns the state.

    Score: the share of scored steps (``gold_agreement``) over all their submitted screening
    solutions; passed when it reaches ``campaign.screening_threshold``. Stays pending while a
    screening solution is left for them, and while they have submitted none (a campaign without
    screening solutions has no gate to pass). With no scored step at all the gate passes.
    """
    if membership.screening != Membership.Screening.PENDING:
        return membership.screening
    done = Assignment.objects.filter(
        campaign=campaign,
        annotator_id=membership.user_id,
        status=Assignment.Status.SUBMITTED,
        solution__kind=Solution.Kind.SCREENING,
    )
    left = (
        Solution.objects.filter(campaign=campaign, kind=Solution.Kind.SCREENING, is_open=True)
        .exclude(pk__in=done.values("solution_id"))
        .exists()
    )
    if left or not done.exists():
        return membership.screening
    gold: dict[int, list[tuple[int, int | None]]] = {}
    for solution_id, index, rating in (
        Step.objects.filter(solution__in=done.values("solution_id"))
        .order_by("solution_id", "index")
        .values_list("solution_id", "index", "gold_rating")
    ):
        gold.setdefault(solution_id, []).append((index, rating))
    given: dict[int, dict[int, int]] = {}
    for solution_id, index, rating in StepLabel.objects.filter(
        assignment__in=done, rating__isnull=False
    ).values_list("step__solution_id", "step__index", "rating"):
        given.setdefault(solution_id, {})[index] = rating
    agree = scored = 0
    for solution_id, steps in gold.items():
        a, s = gold_agreement(
            gold=steps,
            ratings=given.get(solution_id, {}),
            stop_at_first_error=campaign.stop_at_first_error,
        )
        agree, scored = agree + a, scored + s
    score = agree / scored if scored else None
    passed = score is None or score >= campaign.screening_threshold
    membership.screening = Membership.Screening.PASSED if passed else Membership.Screening.FAILED
    membership.screening_score = score
    membership.save(update_fields=["screening", "screening_score"])
    return membership.screening


# --- Holding an assignment -------------------------------------------------------------------


def _assignment_lock(*, assignment: Assignment, annotator) -> tuple[Assignment, Membership]:
    """Lock the membership and the assignment (in that order) for a write by its holder.

    The locked assignment carries ``solution_kind`` and the caller's ``campaign`` (settings only:
    nothing here changes them).
    """
    if assignment.annotator_id != annotator.pk:
        raise NotLeaseHolder()
    membership = _membership_lock(campaign_id=assignment.campaign_id, annotator=annotator)
    if membership.status == Membership.Status.REMOVED:
        raise MembershipInactive()
    locked = _first(
        Assignment.objects.raw(
            "SELECT a.*, s.kind AS solution_kind FROM labeling_assignment a"
            " JOIN labeling_solution s ON s.id = a.solution_id WHERE a.id = %s"
            + _for_update(of="a"),
            [assignment.pk],
        )
    )
    locked.campaign = assignment.campaign
    return locked, membership


def _slot_hold(*, assignment: Assignment) -> None:
    """Make sure the assignment holds its slot, taking it back after a reclaimed lease.

    A leased assignment holds its slot even past expiry until the queue reclaims it. A reclaimed
    one (``expired``) takes it back if the solution still has room (gold solutions always
    have), else ``LeaseTaken``.
    """
    if assignment.status == Assignment.Status.LEASED:
        return
    if assignment.status != Assignment.Status.EXPIRED:
        raise AssignmentClosed()
    campaign = assignment.campaign
    solution = Solution.objects.select_for_update(no_key=True).get(pk=assignment.solution_id)
    if solution.kind == Solution.Kind.REGULAR and solution.assignment_count >= campaign.overlap:
        raise LeaseTaken()
    Solution.objects.filter(pk=solution.pk).slots_change(campaign=campaign, slots=1)
    assignment.status = Assignment.Status.LEASED
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.LEASED)


def _assignment_for_drafts(*, assignment: Assignment, annotator) -> Assignment:
    """Lock the assignment for a draft change by its holder and renew its lease."""
    locked, _ = _assignment_lock(assignment=assignment, annotator=annotator)
    if locked.status in (Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED):
        raise AssignmentClosed()
    now = timezone.now()
    _slot_hold(assignment=locked)
    locked.lease_expires_at = now + locked.campaign.lease_duration
    Assignment.objects.filter(pk=locked.pk).update(lease_expires_at=locked.lease_expires_at)
    return locked


# --- Drafts (the labelling page) ---------------------------------------------------------------


def step_label_set(
    *,
    assignment: Assignment,
    annotator: AbstractBaseUser,
    step_index: int,
    rating: int,
    flagged: bool = False,
    time_spent_ms: int | None = None,
) -> StepLabel:
    """Rate one step of a leased solution (a draft until the assignment is submitted).

    Steps are rated in order: the next unrated step, or again one already rated. With
    stop-at-first-error nothing may follow a negative step, and a step with later ratings cannot
    become negative (undo those first).
    """
    if rating not in RATINGS:
        raise LabelsInvalid("rating", f"A rating is -1, 0 or 1, not {rating!r}.")
    with transaction.atomic():
        locked = _assignment_for_drafts(assignment=assignment, annotator=annotator)
        step = _step_get(assignment=locked, step_index=step_index)
        rated = dict(
            StepLabel.objects.filter(assignment=locked, rating__isnull=False).values_list(
                "step__index", "rating"
            )
        )
        if step_index > len(rated):
            raise LabelsInvalid("step_index", f"Rate step {len(rated)} first.")
        if locked.campaign.stop_at_first_error:
            negative = min((i for i, r in rated.items() if r == Rating.NEGATIVE), default=None)
            if negative is not None and step_index > negative:
                raise LabelsInvalid(
                    "step_index",
                    f"Step {negative} is negative: with stop at first error nothing after it "
                    "is rated.",
                )
            if rating == Rating.NEGATIVE and any(i > step_index for i in rated):
                raise LabelsInvalid(
                    "rating", "Undo the later steps first: nothing may follow a negative step."
                )
        defaults = {
            "rating": rating,
            "flagged": flagged,
            "time_spent_ms": time_spent_ms,
            "chosen_completion": None if rating == Rating.NEGATIVE else 0,
        }
        if rating != Rating.NEGATIVE:
            defaults["human_completion"] = None
        label, _ = StepLabel.objects.update_or_create(
            assignment=locked, step=step, defaults=defaults
        )
    return label


def step_label_undo(
    *, assignment: Assignment, annotator: AbstractBaseUser, step_index: int | None = None
) -> int | None:
    """Remove the last rating (with its flag and correction); returns its step index, or None.

    With ``step_index`` it removes that step's rating only while it is the last one, so a
    retried request (a double press, a resent form) cannot undo the rating before it as well.
    """
    with transaction.atomic():
        locked = _assignment_for_drafts(assignment=assignment, annotator=annotator)
        last = (
            StepLabel.objects.filter(assignment=locked, rating__isnull=False)
            .select_related("step")
            .order_by("-step__index")
            .first()
        )
        if last is None or (step_index is not None and last.step.index != step_index):
            return None
        last.delete()
        return last.step.index


def step_label_flag(
    *, assignment: Assignment, annotator: AbstractBaseUser, step_index: int, flagged: bool = True
) -> StepLabel:
    """Flag a rated step as unsure (or clear the flag)."""
    with transaction.atomic():
        locked = _assignment_for_drafts(assignment=assignment, annotator=annotator)
        label = _rated_label(assignment=locked, step_index=step_index)
        label.flagged = flagged
        label.save(update_fields=["flagged"])
    return label


def step_label_human_completion(
    *, assignment: Assignment, annotator: AbstractBaseUser, step_index: int, text: str | None
) -> StepLabel:
    """Attach a human-written correction to a negative step (PRM800K ``human_completion``).

    Empty text removes it.
    """
    with transaction.atomic():
        locked = _assignment_for_drafts(assignment=assignment, annotator=annotator)
        label = _rated_label(assignment=locked, step_index=step_index)
        if label.rating != Rating.NEGATIVE:
            raise LabelsInvalid("human_completion", "Only a negative step takes a correction.")
        label.human_completion = _human_completion(text)
        label.save(update_fields=["human_completion"])
    return label


def _step_get(*, assignment: Assignment, step_index: int) -> Step:
    try:
        return Step.objects.get(solution_id=assignment.solution_id, index=step_index)
    except Step.DoesNotExist:
        raise LabelsInvalid("step_index", f"The solution has no step {step_index}.") from None


def _rated_label(*, assignment: Assignment, step_index: int) -> StepLabel:
    label = StepLabel.objects.filter(
        assignment=assignment, step__index=step_index, rating__isnull=False
    ).first()
    if label is None:
        raise LabelsInvalid("step_index", f"Step {step_index} is not rated.")
    return label


def _human_completion(text: str | None) -> dict | None:
    """PRM800K's ``human_completion`` object for a correction text, None for no text."""
    text = (text or "").strip()
    if not text:
        return None
    return {"text": text, "rating": None, "source": "human", "flagged": False}


# --- Submitting ------------------------------------------------------------------------------


def assignment_submit(
    *,
    assignment: Assignment,
    annotator: AbstractBaseUser,
    submission_key: str,
    ratings: list[int] | None = None,
    flags: list[int] | None = None,
    human_completion: str | None = None,
    finish_reason: str | None = None,
    total_time_ms: int | None = None,
    step_times_ms: list[int] | None = None,
) -> SubmitResult:
    """Finish an assignment with its labels; idempotent on (annotator, submission_key).

    ``ratings`` (step order, from step 0) replace the drafts; without them the drafts are
    submitted. ``flags`` are the indexes of flagged steps, ``human_completion`` a correction of
    the first negative step, ``step_times_ms`` the time on each rated step. ``finish_reason``
    defaults to ``found_error`` when a step is negative, else ``solution``; ``give_up`` and
    ``bad_problem`` take any rated prefix and release the slot (a bad problem report also
    counts towards ``campaign.bad_problem_limit``, which takes the solution out of the queue).
    A retry with the same key changes nothing and returns an equal result.
    """
    if not submission_key or len(submission_key) > 64:
        raise LabelsInvalid("submission_key", "A submission key of 1 to 64 characters is required.")
    try:
        return _assignment_submit(
            assignment=assignment,
            annotator=annotator,
            submission_key=submission_key,
            ratings=ratings,
            flags=flags,
            human_completion=human_completion,
            finish_reason=finish_reason,
            total_time_ms=total_time_ms,
            step_times_ms=step_times_ms,
        )
    except IntegrityError as error:
        # The unique (annotator, submission_key) constraint: the key belongs to another
        # assignment. Left to the database so the common path needs no lookup.
        if "submission_key" not in str(error):
            raise
        raise LabelsInvalid(
            "submission_key", "This submission key was already used for another assignment."
        ) from error


def _assignment_submit(
    *,
    assignment: Assignment,
    annotator,
    submission_key: str,
    ratings,
    flags,
    human_completion,
    finish_reason,
    total_time_ms,
    step_times_ms,
) -> SubmitResult:
    with transaction.atomic():
        locked, membership = _assignment_lock(assignment=assignment, annotator=annotator)
        if locked.status == Assignment.Status.SUBMITTED:
            if locked.submission_key == submission_key:
                return _submit_result(assignment=locked, membership=membership)
            raise AssignmentClosed("This assignment was already submitted (with another key).")
        if locked.status == Assignment.Status.SKIPPED:
            raise AssignmentClosed("This assignment was skipped.")
        campaign = locked.campaign
        steps, drafts = _steps_with_drafts(assignment=locked)
        labels, reason = _labels_final(
            n_steps=len(steps),
            stop_at_first_error=campaign.stop_at_first_error,
            drafts=drafts,
            ratings=ratings,
            flags=flags,
            human_completion=human_completion,
            step_times_ms=step_times_ms,
            finish_reason=finish_reason,
        )
        if total_time_ms is not None and total_time_ms < 0:
            raise LabelsInvalid("total_time_ms", "Time spent cannot be negative.")
        now = timezone.now()
        _slot_hold(assignment=locked)
        if drafts:
            StepLabel.objects.filter(assignment=locked).delete()
        _labels_insert(assignment_id=locked.pk, labels=labels, step_ids=steps, now=now)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE labeling_assignment SET status = 'submitted', submitted_at = %s,"
                " finish_reason = %s, total_time_ms = %s, submission_key = %s WHERE id = %s",
                [
                    connection.ops.adapt_datetimefield_value(now),
                    reason,
                    total_time_ms,
                    submission_key,
                    locked.pk,
                ],
            )
        if reason in Assignment.RELEASING_REASONS:
            bad = int(reason == FinishReason.BAD_PROBLEM)
            Solution.objects.filter(pk=locked.solution_id).slots_change(
                campaign=campaign, slots=-1, reports=bad
            )
        screening = None
        if locked.solution_kind == Solution.Kind.SCREENING:
            screening = _screening_evaluate(campaign=campaign, membership=membership)
        if campaign.active_learning:
            # Active learning counts the new labels once they are committed; never fails nor
            # holds the submit.
            events.publish_on_commit(events.labels_submitted, campaign_id=campaign.pk)
    return SubmitResult(
        assignment_id=locked.pk,
        solution_id=locked.solution_id,
        status=Assignment.Status.SUBMITTED,
        finish_reason=reason,
        submitted_at=now,
        rated_steps=len(labels),
        screening=screening,
    )


def _labels_insert(
    *, assignment_id: int, labels: list[_Label], step_ids: dict[int, int], now: datetime
) -> None:
    """Write the submitted labels in one INSERT (the hot path's biggest ORM cost otherwise)."""
    if not labels:
        return
    created = connection.ops.adapt_datetimefield_value(now)
    values = []
    for label in labels:
        correction = _human_completion(label.human_completion)
        values += [
            assignment_id,
            step_ids[label.index],
            label.rating,
            label.flagged,
            label.time_spent_ms,
            0,  # completion_index: the step's own completion, with no alternatives
            "[]",
            None if correction is None else json.dumps(correction),
            None if label.rating == Rating.NEGATIVE else 0,  # chosen_completion, as PRM800K
            created,
        ]
    rows = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(labels))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO labeling_steplabel (assignment_id, step_id, rating, flagged,"
            " time_spent_ms, completion_index, alternatives, human_completion,"
            " chosen_completion, created_at) VALUES " + rows,
            values,
        )


def _steps_with_drafts(*, assignment: Assignment) -> tuple[dict[int, int], dict[int, _Label]]:
    """The solution's step ids by index, and the assignment's draft labels, in one query."""
    steps: dict[int, int] = {}
    drafts: dict[int, _Label] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            'SELECT st."index", st.id, l.id, l.rating, l.flagged, l.time_spent_ms,'
            " l.human_completion FROM labeling_step st LEFT JOIN labeling_steplabel l"
            " ON l.step_id = st.id AND l.assignment_id = %s WHERE st.solution_id = %s",
            [assignment.pk, assignment.solution_id],
        )
        rows = cursor.fetchall()
    for index, pk, label_pk, rating, flagged, ms, correction in rows:
        steps[index] = pk
        if label_pk is not None:
            drafts[index] = _Label(
                index=index,
                rating=rating,
                flagged=bool(flagged),
                time_spent_ms=ms,
                human_completion=(human_completion_load(correction) or {}).get("text"),
            )
    return steps, drafts


def _submit_result(*, assignment: Assignment, membership: Membership) -> SubmitResult:
    """The result of an earlier submission, rebuilt from what it stored."""
    kind = Solution.objects.filter(pk=assignment.solution_id).values_list("kind", flat=True).get()
    return SubmitResult(
        assignment_id=assignment.pk,
        solution_id=assignment.solution_id,
        status=assignment.status,
        finish_reason=assignment.finish_reason,
        submitted_at=assignment.submitted_at,
        rated_steps=StepLabel.objects.filter(assignment=assignment, rating__isnull=False).count(),
        screening=membership.screening if kind == Solution.Kind.SCREENING else None,
        replayed=True,
    )


def _labels_final(
    *,
    n_steps: int,
    stop_at_first_error: bool,
    drafts: dict[int, _Label],
    ratings: list[int] | None,
    flags: list[int] | None,
    human_completion: str | None,
    step_times_ms: list[int] | None,
    finish_reason: str | None,
) -> tuple[list[_Label], str]:
    """The labels and finish reason to store, checked against every rule; or ``LabelsInvalid``."""
    if ratings is None:
        rated = sorted(i for i, d in drafts.items() if d.rating is not None)
        if rated != list(range(len(rated))):
            missing = next(i for i, j in enumerate([*rated, None]) if i != j)
            raise LabelsInvalid("ratings", f"Step {missing} is not rated.")
        labels = [drafts[i] for i in rated]
    else:
        if not isinstance(ratings, list):
            raise LabelsInvalid("ratings", "Ratings are a list, one per step from step 0.")
        for i, r in enumerate(ratings):
            if r not in RATINGS or isinstance(r, bool):
                raise LabelsInvalid("ratings", f"Step {i}: a rating is -1, 0 or 1, not {r!r}.")
        labels = [_Label(index=i, rating=r) for i, r in enumerate(ratings)]
    if len(labels) > n_steps:
        raise LabelsInvalid(
            "ratings", f"The solution has {n_steps} steps; {len(labels)} ratings were given."
        )
    negatives = [label.index for label in labels if label.rating == Rating.NEGATIVE]
    first_negative = negatives[0] if negatives else None
    if stop_at_first_error and first_negative is not None and len(labels) > first_negative + 1:
        raise LabelsInvalid(
            "ratings",
            f"Step {first_negative} is negative: with stop at first error no step after it "
            "is rated.",
        )
    if flags is not None:
        if not isinstance(flags, list):
            raise LabelsInvalid("flags", "Flags are a list of step indexes.")
        for i in flags:
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(labels):
                raise LabelsInvalid("flags", f"Only a rated step can be flagged, not {i!r}.")
        for label in labels:
            label.flagged = label.index in flags
    if step_times_ms is not None:
        if not isinstance(step_times_ms, list) or len(step_times_ms) > len(labels):
            raise LabelsInvalid("step_times_ms", "At most one time per rated step.")
        for label, ms in zip(labels, step_times_ms, strict=False):
            if not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
                raise LabelsInvalid("step_times_ms", f"Step {label.index}: {ms!r} is not a time.")
            label.time_spent_ms = ms
    if human_completion is not None and human_completion.strip():
        if first_negative is None:
            raise LabelsInvalid("human_completion", "A correction needs a negative step.")
        for label in labels:
            label.human_completion = None
        labels[first_negative].human_completion = human_completion
    complete = len(labels) == n_steps or (stop_at_first_error and first_negative is not None)
    if finish_reason is None or finish_reason == "":
        if not complete:
            raise LabelsInvalid(
                "ratings",
                f"{len(labels)} of {n_steps} steps are rated: rate every step"
                + (" up to the first negative one" if stop_at_first_error else "")
                + ", or finish with give_up or bad_problem.",
            )
        finish_reason = (
            FinishReason.SOLUTION if first_negative is None else FinishReason.FOUND_ERROR
        )
    elif finish_reason not in FinishReason.values:
        raise LabelsInvalid(
            "finish_reason", f"Finish reason is one of {', '.join(FinishReason.values)}."
        )
    elif finish_reason == FinishReason.SOLUTION and (len(labels) != n_steps or negatives):
        raise LabelsInvalid(
            "finish_reason", "Finish reason 'solution' needs every step rated and none negative."
        )
    elif finish_reason == FinishReason.FOUND_ERROR and (first_negative is None or not complete):
        raise LabelsInvalid(
            "finish_reason",
            "Finish reason 'found_error' needs a negative step"
            + ("" if stop_at_first_error else " and every step rated")
            + ".",
        )
    return labels, str(finish_reason)


def assignment_skip(*, assignment: Assignment, annotator: AbstractBaseUser) -> Assignment:
    """Hand a solution back unlabelled: frees its slot, and it is never served to them again.

    Drafts are dropped. Skipping twice is harmless. Screening questions cannot be skipped: the
    score is over all of them.
    """
    with transaction.atomic():
        locked, _ = _assignment_lock(assignment=assignment, annotator=annotator)
        if locked.status == Assignment.Status.SKIPPED:
            return locked
        if locked.status == Assignment.Status.SUBMITTED:
            raise AssignmentClosed("This assignment was already submitted.")
        if locked.solution_kind == Solution.Kind.SCREENING:
            raise AssignmentClosed("Screening questions cannot be skipped.")
        if locked.status == Assignment.Status.LEASED:
            Solution.objects.filter(pk=locked.solution_id).slots_change(
                campaign=locked.campaign, slots=-1
            )
        StepLabel.objects.filter(assignment=locked).delete()
        locked.status = Assignment.Status.SKIPPED
        locked.save(update_fields=["status"])
    return locked

"""Leases and slots: reclaiming expired leases, holding an assignment while its holder writes."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from labeling.models import Assignment, Campaign, Membership, Solution
from labeling.queue.errors import AssignmentClosed, LeaseTaken, MembershipInactive, NotLeaseHolder
from labeling.queue.screening import membership_lock
from labeling.queue.shared import for_update_clause, model_columns, model_fetch

# Expired leases reclaimed before a claim: enough to keep up with any realistic rate of
# abandoned work, few enough that the probe stays a short index range scan.
RECLAIM_BATCH = 50


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
    expired = Assignment.objects.expired_leases(now)
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


def membership_pause(
    *,
    membership: Membership,
    status: str = Membership.Status.PAUSED,
    reason: str = "",
    figures: dict | None = None,
    now: datetime | None = None,
) -> int:
    """Stop serving a member: pause (or remove, ``status``) them and end their leases at once,
    giving back the slots the leases held; returns how many leases it ended.

    The one way anyone stops a member's work (a manager's pause or removal, the QC pause rule),
    so the solutions they held go back to the queue at once rather than when the sweep passes,
    whichever path paused them. A change to ``paused`` records when, and the rule's ``reason``
    and ``figures`` (none for a manager's pause); a member already paused keeps theirs.

    The caller holds ``membership`` locked (the lock order: membership, assignments, solutions).
    Their leased rows are taken ``SKIP LOCKED``: one locked by someone else is being reclaimed by
    the sweep, which releases its slot itself.
    """
    now = now or timezone.now()
    changes = ["status"]
    if status == Membership.Status.PAUSED and membership.status != status:
        membership.paused_at, membership.pause_reason = now, reason
        membership.pause_figures = figures
        changes += ["paused_at", "pause_reason", "pause_figures"]
    membership.status = status
    with transaction.atomic():
        membership.save(update_fields=changes)
        rows = list(
            Assignment.objects.filter(
                campaign_id=membership.campaign_id,
                annotator_id=membership.user_id,
                status=Assignment.Status.LEASED,
            )
            .select_for_update(skip_locked=True, no_key=True)
            .values_list("pk", "solution_id")
        )
        if rows:
            Assignment.objects.filter(pk__in=[pk for pk, _ in rows]).update(
                status=Assignment.Status.EXPIRED, lease_expires_at=now
            )
            _slots_release(Counter((membership.campaign_id, sid) for _, sid in rows))
    return len(rows)


def _slots_release(counts: Counter) -> None:
    """Give back ``counts[(campaign_id, solution_id)]`` slots, locking the solutions in id order."""
    ids = sorted(sid for _, sid in counts)
    locks = Solution.objects.filter(pk__in=ids).order_by("pk").select_for_update(no_key=True)
    list(locks.values_list("pk"))
    campaigns = Campaign.objects.in_bulk({cid for cid, _ in counts})
    for (cid, sid), n in sorted(counts.items(), key=lambda item: item[0][1]):
        Solution.objects.filter(pk=sid).slots_change(campaign=campaigns[cid], slots=-n)


# --- Holding an assignment -------------------------------------------------------------------


def assignment_lock(
    *, assignment: Assignment, annotator, with_solution: bool = False
) -> tuple[Assignment, Membership]:
    """Lock the membership and the assignment (in that order) for a write by its holder, and
    with ``with_solution`` its solution too, in the same statement (a submit, which recounts
    the solution's disagreement: ``disputes_recount(..., locked=True)``). Drafts leave the
    solution unlocked: the queue's claims skip locked solutions.

    The locked assignment carries ``solution_kind`` and the caller's ``campaign`` (settings only:
    nothing here changes them).
    """
    if assignment.annotator_id != annotator.pk:
        raise NotLeaseHolder()
    membership = membership_lock(campaign_id=assignment.campaign_id, annotator=annotator)
    # A paused member does not take up held work (nor does a removed one): their lease runs out
    # and the queue hands the solution to someone else.
    if not membership.is_active:
        raise MembershipInactive(membership.pause_notice or None)
    locked = model_fetch(
        Assignment,
        f"SELECT {model_columns(Assignment, 'a')}, s.kind FROM labeling_assignment a"
        " JOIN labeling_solution s ON s.id = a.solution_id WHERE a.id = %s"
        + for_update_clause(of="a, s" if with_solution else "a"),
        [assignment.pk],
        extra=("solution_kind",),
    )
    locked.campaign = assignment.campaign
    return locked, membership


def slot_hold(*, assignment: Assignment) -> None:
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


def assignment_for_drafts(*, assignment: Assignment, annotator) -> Assignment:
    """Lock the assignment for a draft change by its holder and renew its lease."""
    locked, _ = assignment_lock(assignment=assignment, annotator=annotator)
    if locked.status in (Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED):
        raise AssignmentClosed()
    now = timezone.now()
    slot_hold(assignment=locked)
    locked.lease_expires_at = now + locked.campaign.lease_duration
    Assignment.objects.filter(pk=locked.pk).update(lease_expires_at=locked.lease_expires_at)
    return locked

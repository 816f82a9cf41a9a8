"""What a review does to the queue: rejected work gives its slot back, and is labelled again.

The review itself (who, comment, corrections) is ``annotators``' business; the slot and the
assignment's state are the queue's, so the rule lives here and the review service calls it in the
same transaction as it writes the review.
"""

from __future__ import annotations

from django.db import transaction

from labeling.models import Assignment, FinishReason, Membership, Solution
from labeling.queue.errors import AssignmentClosed
from labeling.queue.screening import membership_lock_sql
from labeling.queue.shared import for_update_clause, model_columns, model_fetch

REVIEWABLE = (Assignment.Status.SUBMITTED, Assignment.Status.REJECTED)


def assignment_review_outcome(*, assignment: Assignment, rejected: bool) -> Assignment:
    """Put reviewed work in the state its decision says, and keep the solution's slots right.

    Rejecting a submitted assignment marks it ``rejected`` (its labels stay) and releases the
    slot it held, so the queue serves the solution again: to another annotator, or to the same
    one where the campaign allows it (``Campaign.relabel_by_same_annotator``). A rejected bad
    problem report stops counting towards the campaign's limit. Accepting rejected work again
    (a changed review) takes the slot back; the solution may then hold more labels than the
    overlap asks, which closes it and loses nothing. Deciding the same way twice changes
    nothing. Locks in the queue's order: the annotator's membership, the assignment, the
    solution. Raises ``AssignmentClosed`` for work that is not submitted.
    """
    with transaction.atomic():
        # The membership serialises this with the annotator's own writes (an amendment racing
        # the review); imported work may belong to someone who is no member any more.
        model_fetch(
            Membership, membership_lock_sql(), [assignment.campaign_id, assignment.annotator_id]
        )
        locked = model_fetch(
            Assignment,
            f"SELECT {model_columns(Assignment)} FROM labeling_assignment WHERE id = %s"
            + for_update_clause(),
            [assignment.pk],
        )
        if locked is None or locked.status not in REVIEWABLE:
            raise AssignmentClosed("Only submitted work can be reviewed.")
        target = Assignment.Status.REJECTED if rejected else Assignment.Status.SUBMITTED
        if locked.status == target:
            return locked
        held_before = locked.holds_slot
        reported_before = _reports(locked)
        locked.status = target
        slots = int(locked.holds_slot) - int(held_before)
        reports = _reports(locked) - reported_before
        Assignment.objects.filter(pk=locked.pk).update(status=target)
        # Rejected work is nobody's final word: its labels leave (or rejoin) the disputes.
        Solution.objects.filter(pk=locked.solution_id).disputes_recount()
        if slots or reports:
            solutions = Solution.objects.filter(pk=locked.solution_id)
            solution = solutions.select_for_update(no_key=True).get()
            if solution.assignment_count + slots < 0 or solution.bad_problem_reports + reports < 0:
                # The counters disagree with the rows (work written around the queue): recount.
                solutions.refresh_queue_state()
            else:
                solutions.slots_change(campaign=assignment.campaign, slots=slots, reports=reports)
    assignment.status = locked.status
    return locked


def _reports(assignment: Assignment) -> int:
    """The bad problem reports the assignment counts for (``refresh_queue_state``'s rule)."""
    return int(
        assignment.status == Assignment.Status.SUBMITTED
        and assignment.finish_reason == FinishReason.BAD_PROBLEM
    )

"""Amending submitted work before review: a new version of the assignment, the old one kept."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from labeling.models import Assignment, Review, Solution, StepLabel
from labeling.queue.errors import AssignmentClosed
from labeling.queue.leases import assignment_lock
from labeling.queue.submit import labels_final, labels_insert, steps_with_drafts


def assignment_amend(
    *,
    assignment: Assignment,
    annotator: AbstractBaseUser,
    ratings: list[int],
    flags: list[int] | None = None,
    human_completion: str | None = None,
) -> Assignment:
    """Replace the annotator's submitted labels before a reviewer has looked at them.

    The amendment is a new ``submitted`` assignment whose ``supersedes`` is the old one; the old
    one becomes ``superseded`` and keeps its labels for audit. Exports take the latest version;
    the queue's slot moves from the old row to the new in the same transaction (the finish
    reason keeps its kind: work given up or reported as a bad problem stays so, and holds no
    slot), so ``Solution.assignment_count`` does not change. The same rules as a submission apply
    to the labels (``ratings`` from step 0, stop at first error). Reviewed work, screening
    answers (already scored) and work that is not the caller's are refused.
    """
    with transaction.atomic():
        locked, _ = assignment_lock(assignment=assignment, annotator=annotator)
        if locked.status != Assignment.Status.SUBMITTED:
            raise AssignmentClosed("Only submitted work that is not reviewed can be amended.")
        if Review.objects.filter(assignment_id=locked.pk).exists():
            raise AssignmentClosed("A reviewer has looked at this work: it can no longer change.")
        if locked.solution_kind == Solution.Kind.SCREENING:
            raise AssignmentClosed("Screening answers are scored when submitted: they are final.")
        steps, _ = steps_with_drafts(assignment=locked)
        kept_reason = (
            locked.finish_reason if locked.finish_reason in Assignment.RELEASING_REASONS else None
        )
        labels, reason = labels_final(
            n_steps=len(steps),
            stop_at_first_error=locked.campaign.stop_at_first_error,
            drafts={},
            ratings=ratings,
            flags=flags,
            human_completion=human_completion,
            step_times_ms=None,
            finish_reason=kept_reason,
        )
        # The time spent was spent on the first version; it stays with each step.
        times = dict(
            StepLabel.objects.filter(assignment_id=locked.pk).values_list(
                "step__index", "time_spent_ms"
            )
        )
        for label in labels:
            label.time_spent_ms = times.get(label.index)
        now = timezone.now()
        Assignment.objects.filter(pk=locked.pk).update(status=Assignment.Status.SUPERSEDED)
        amended = Assignment.objects.create(
            campaign_id=locked.campaign_id,
            solution_id=locked.solution_id,
            annotator_id=locked.annotator_id,
            status=Assignment.Status.SUBMITTED,
            leased_at=locked.leased_at,
            lease_expires_at=locked.lease_expires_at,
            submitted_at=now,
            finish_reason=reason,
            total_time_ms=locked.total_time_ms,
            source=locked.source,
            supersedes_id=locked.pk,
        )
        labels_insert(assignment_id=amended.pk, labels=labels, step_ids=steps, now=now)
        Solution.objects.filter(pk=locked.solution_id).disputes_recount()
    return amended

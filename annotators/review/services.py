"""Writes of review and adjudication: accept, correct or reject a submission; decide a step.

Both raise ``annotators.services.ManageError`` (with a message for people) when a request breaks
a rule; who may call them is the caller's check (``labeling.permissions.campaign_for``). What a
rejection does to the queue (the solution wants a label again) is the queue's own rule
(``labeling.queue.assignment_review_outcome``), called here in the same transaction.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotators.review.selectors import disputed_steps
from annotators.services import ManageError
from labeling.models import (
    Adjudication,
    AdjudicationRequest,
    Assignment,
    Campaign,
    Rating,
    Review,
    Solution,
    Step,
    StepLabel,
)
from labeling.queue import LabelingError, assignment_review_outcome
from labeling.queue.review import REVIEWABLE


def review_submit(
    *,
    assignment: Assignment,
    reviewer: AbstractBaseUser,
    decision: str,
    comment: str = "",
    corrections: dict[int, int] | None = None,
) -> Review:
    """Accept (optionally correcting ratings) or reject (with a comment) a submitted assignment.

    ``corrections`` map a rated step's index to the rating it should have had; a correction
    equal to the annotator's rating is dropped. Exports with "only reviewed" take accepted work
    with its corrections. A rejection sends the solution back to the queue and keeps the
    rejected labels (``labeling.queue.assignment_review_outcome``, in this transaction); exports
    include them, flagged, only with ``include_rejected``. A later review of the same assignment
    replaces the earlier one, and turning a rejection into an acceptance (or back) moves the
    slot again. Nobody reviews their own work.
    """
    comment = (comment or "").strip()
    corrections = corrections or {}
    if assignment.status not in REVIEWABLE:
        raise ManageError("Only submitted work can be reviewed.")
    if assignment.annotator_id == reviewer.pk:
        raise ManageError("You cannot review your own work.")
    if decision not in Review.Decision.values:
        raise ManageError("A review accepts or rejects.")
    if decision == Review.Decision.REJECTED:
        if not comment:
            raise ManageError("Say why you reject it: the annotator reads your comment.")
        if corrections:
            raise ManageError(
                "Rejected work is never exported as training data: correct it, or reject it."
            )
    rated = dict(
        StepLabel.objects.filter(assignment=assignment, rating__isnull=False).values_list(
            "step__index", "rating"
        )
    )
    kept: dict[str, int] = {}
    for index, rating in corrections.items():
        if index not in rated:
            raise ManageError(f"Step {index} was not rated by the annotator: nothing to correct.")
        if rating not in Rating.values:
            raise ManageError(f"Step {index}: a rating is -1, 0 or 1.")
        if rating != rated[index]:
            kept[str(index)] = rating
    with transaction.atomic():
        try:
            assignment_review_outcome(
                assignment=assignment, rejected=decision == Review.Decision.REJECTED
            )
        except LabelingError as error:
            raise ManageError(str(error)) from error
        review, _ = Review.objects.update_or_create(
            assignment=assignment,
            defaults={
                "reviewer": reviewer,
                "decision": decision,
                "comment": comment,
                "corrections": kept,
                "created_at": timezone.now(),
            },
        )
    return review


def adjudication_decide(
    *, campaign: Campaign, step: Step, decided_by: AbstractBaseUser, rating: int, note: str = ""
) -> Adjudication:
    """Set the final rating of a step on which annotators disagree; earlier decisions are kept.

    The step must be one of the campaign's regular solutions and disputed now (two or more
    current assignments rated it differently), sent to adjudication by a manager
    (``AdjudicationRequest``), or already decided (a decision may be changed
    after the dispute ended, e.g. once a rejection removed one side). A new decision replaces
    the current one, which stays with ``replaced_at`` set. The annotators' labels are not
    touched: agreement figures keep reading them; exports use the decision with
    ``annotators="adjudicated"``.
    """
    if rating not in Rating.values:
        raise ManageError("A rating is -1, 0 or 1.")
    solution = step.solution
    if solution.campaign_id != campaign.pk or solution.kind != Solution.Kind.REGULAR:
        raise ManageError("Only steps of this campaign's regular solutions are adjudicated.")
    now = timezone.now()
    with transaction.atomic():
        current = (
            Adjudication.objects.select_for_update()
            .filter(step=step, replaced_at__isnull=True)
            .first()
        )
        sent = AdjudicationRequest.objects.filter(step=step).exists()
        if (
            current is None
            and not sent
            and not disputed_steps(campaign=campaign).filter(step_id=step.pk)
        ):
            raise ManageError("The annotators agree on this step: there is nothing to decide.")
        if current is not None:
            current.replaced_at = now
            current.save(update_fields=["replaced_at"])
        try:
            with transaction.atomic():
                return Adjudication.objects.create(
                    step=step,
                    campaign=campaign,
                    rating=rating,
                    note=(note or "").strip(),
                    decided_by=decided_by,
                    decided_at=now,
                )
        except IntegrityError as error:
            raise ManageError(
                "Another reviewer decided this step at the same moment: reload and look again."
            ) from error

"""Drafts: the labelling page rates, undoes, flags and corrects steps one at a time."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from labeling.models import Assignment, Rating, Step, StepLabel
from labeling.queue.errors import LabelsInvalid
from labeling.queue.leases import assignment_for_drafts
from labeling.queue.shared import RATINGS, human_completion_from_text


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
        locked = assignment_for_drafts(assignment=assignment, annotator=annotator)
        step = _step_get(assignment=locked, step_index=step_index)
        rated = dict(
            StepLabel.objects.filter(assignment=locked, rating__isnull=False).values_list(
                "step__index", "rating"
            )
        )
        if step_index > len(rated):
            raise LabelsInvalid("step_index", f"Rate step {len(rated) + 1} first.")
        if locked.campaign.stop_at_first_error:
            negative = min((i for i, r in rated.items() if r == Rating.NEGATIVE), default=None)
            if negative is not None and step_index > negative:
                raise LabelsInvalid(
                    "step_index",
                    f"Step {negative + 1} is negative: with stop at first error nothing after it "
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
        locked = assignment_for_drafts(assignment=assignment, annotator=annotator)
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
        locked = assignment_for_drafts(assignment=assignment, annotator=annotator)
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
        locked = assignment_for_drafts(assignment=assignment, annotator=annotator)
        label = _rated_label(assignment=locked, step_index=step_index)
        if label.rating != Rating.NEGATIVE:
            raise LabelsInvalid("human_completion", "Only a negative step takes a correction.")
        label.human_completion = human_completion_from_text(text)
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
        raise LabelsInvalid("step_index", f"Step {step_index + 1} is not rated.")
    return label

"""Drafts: the labelling page rates, undoes, flags and corrects steps one at a time."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from labeling.models import Assignment, Rating, Step, StepLabel
from labeling.queue.errors import DraftsChanged, LabelsInvalid
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


# --- The drafts' version: what a page showed, checked when it submits --------------------------

_WORDS = {1: "+1 positive", 0: "0 neutral", -1: "−1 negative"}


def drafts_version(labels: Iterable[tuple[int, int | None, bool]]) -> str:
    """The drafts as a page shows them, in a few characters: ``"0:1,1:0f,2:-1"`` (step index,
    rating, ``f`` when flagged), from ``(step_index, rating, flagged)`` of each rated step.

    The page carries it and its submission sends it back (``labeling/_submit_fields.html``): a
    submission is stored only when the drafts are still what that page showed (``drafts_check``),
    so two tabs on one solution never store what the submitting one does not show. Content, not
    a counter: a change undone elsewhere leaves the page right, and no row is written per rating."""
    return ",".join(
        f"{index}:{rating}{'f' if flagged else ''}"
        for index, rating, flagged in sorted(labels)
        if rating is not None
    )


def _version_read(version: str) -> dict[int, tuple[int, bool]]:
    shown: dict[int, tuple[int, bool]] = {}
    for part in filter(None, version.split(",")):
        index, _, rest = part.partition(":")
        flagged = rest.endswith("f")
        try:
            shown[int(index)] = (int(rest.rstrip("f")), flagged)
        except ValueError:
            continue
    return shown


def drafts_check(*, seen: str, now: Iterable[tuple[int, int | None, bool]]) -> None:
    """Refuse (``DraftsChanged``) a submission from a page whose drafts are not the saved ones,
    saying for each step that differs what the page showed and what is saved."""
    now = list(now)
    if drafts_version(now) == seen:
        return
    shown = _version_read(seen)
    saved = {index: (rating, flagged) for index, rating, flagged in now if rating is not None}
    differences = []
    for index in sorted(set(shown) | set(saved)):
        before, after = shown.get(index), saved.get(index)
        if before == after:
            continue
        if before is None:
            said = f"this page did not show a rating; saved: {_said(after)}"
        elif after is None:
            said = f"this page showed {_said(before)}; it is not rated now"
        else:
            said = f"this page showed {_said(before)}; saved: {_said(after)}"
        differences.append(f"Step {index + 1}: {said}.")
    raise DraftsChanged(differences)


def _said(label: tuple[int, bool] | None) -> str:
    if label is None:
        return "no rating"
    rating, flagged = label
    return _WORDS.get(rating, str(rating)) + (" (unsure)" if flagged else "")

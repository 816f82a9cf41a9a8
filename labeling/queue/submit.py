"""Submitting and skipping: the labels an assignment is finished with, checked and stored."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from labeling import events
from labeling.columns import STEP_LABEL
from labeling.forms import STEP_TIME_MAX_MS, TOTAL_TIME_MAX_MS, clamp_ms
from labeling.models import (
    Assignment,
    FinishReason,
    Membership,
    Rating,
    Solution,
    StepLabel,
    disputes_recount,
)
from labeling.queue.drafts import drafts_check
from labeling.queue.errors import AssignmentClosed, LabelsInvalid
from labeling.queue.leases import assignment_lock, slot_hold
from labeling.queue.phase1.drafts import phase1_drafts_drop
from labeling.queue.phase1.submit import phase1_store
from labeling.queue.phase1.view import phase1_applies
from labeling.queue.qc_pause import qc_pause_evaluate
from labeling.queue.screening import screening_evaluate
from labeling.queue.shared import RATINGS, human_completion_from_text, human_completion_load

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
    # The solution's kind (``Solution.Kind``): what the page may say after it depends on it.
    solution_kind: str = Solution.Kind.REGULAR
    # True when this (QC) submission paused the annotator under the campaign's QC pause rule.
    paused: bool = False
    replayed: bool = field(default=False, compare=False)


@dataclass
class _Label:
    """One step's label while a submission is assembled and checked."""

    index: int
    rating: int | None
    flagged: bool = False
    time_spent_ms: int | None = None
    human_completion: str | None = None


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
    outcome_rating: int | None = None,
    drafts_seen: str | None = None,
) -> SubmitResult:
    """Finish an assignment with its labels; idempotent on (annotator, submission_key).

    ``ratings`` (step order, from step 0) replace the drafts; without them the drafts are
    submitted. ``flags`` are the indexes of flagged steps, ``human_completion`` a correction of
    the first negative step, ``step_times_ms`` the time on each rated step. ``finish_reason``
    defaults to ``found_error`` when a step is negative, else ``solution``; ``give_up`` and
    ``bad_problem`` take any rated prefix and release the slot (a bad problem report also
    counts towards ``campaign.bad_problem_limit``, which takes the solution out of the queue).
    A retry with the same key changes nothing and returns an equal result. ``outcome_rating``:
    the annotator's rating of a trajectory's final outcome (-1, 0, 1; ``labeling.traces``), kept
    on the assignment. ``drafts_seen`` (the labelling page's ``drafts_version``) refuses the
    submission with ``DraftsChanged`` when the drafts are no longer what the page showed
    (another tab changed them).
    """
    if not submission_key or len(submission_key) > 64:
        raise LabelsInvalid("submission_key", "A submission key of 1 to 64 characters is required.")
    if outcome_rating is not None and outcome_rating not in Rating.values:
        raise LabelsInvalid("outcome_rating", "The final outcome is rated -1, 0 or 1.")
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
            outcome_rating=outcome_rating,
            drafts_seen=drafts_seen,
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
    outcome_rating,
    drafts_seen: str | None = None,
) -> SubmitResult:
    with transaction.atomic():
        locked, membership = assignment_lock(
            assignment=assignment, annotator=annotator, with_solution=True
        )
        if locked.status == Assignment.Status.SUBMITTED:
            if locked.submission_key == submission_key:
                return _submit_result(assignment=locked, membership=membership)
            raise AssignmentClosed("This assignment was already submitted (with another key).")
        if locked.status == Assignment.Status.SKIPPED:
            raise AssignmentClosed("This assignment was skipped.")
        campaign = locked.campaign
        kind = locked.solution_kind
        if phase1_applies(campaign=campaign, solution_kind=kind):
            # PRM800K phase 1: the path built on the page becomes the labels (queue.phase1).
            if ratings is not None or flags is not None or human_completion:
                raise LabelsInvalid(
                    "ratings", "In phase 1 mode steps are rated and chosen one at a time."
                )
            if total_time_ms is not None and total_time_ms < 0:
                raise LabelsInvalid("total_time_ms", "Time spent cannot be negative.")
            rated, reason = phase1_store(assignment=locked, finish_reason=finish_reason)
            labels: list[_Label] | None = None
        else:
            steps, drafts = steps_with_drafts(assignment=locked)
            if drafts_seen is not None and ratings is None:
                drafts_check(
                    seen=drafts_seen, now=[(i, d.rating, d.flagged) for i, d in drafts.items()]
                )
            labels, reason = labels_final(
                n_steps=len(steps),
                stop_at_first_error=campaign.stop_at_first_error,
                drafts=drafts,
                ratings=ratings,
                flags=flags,
                human_completion=human_completion,
                step_times_ms=step_times_ms,
                finish_reason=finish_reason,
            )
            rated = len(labels)
            if total_time_ms is not None and total_time_ms < 0:
                raise LabelsInvalid("total_time_ms", "Time spent cannot be negative.")
            slot_hold(assignment=locked)
            if drafts:
                StepLabel.objects.filter(assignment=locked).delete()
        # Client-measured: absurd values are clamped, as on the page (labeling.forms).
        total_time_ms = clamp_ms(total_time_ms, maximum=TOTAL_TIME_MAX_MS)
        now = timezone.now()
        if labels is not None:
            labels_insert(assignment_id=locked.pk, labels=labels, step_ids=steps, now=now)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE labeling_assignment SET status = 'submitted', submitted_at = %s,"
                " finish_reason = %s, total_time_ms = %s, submission_key = %s,"
                " outcome_rating = %s WHERE id = %s",
                [
                    connection.ops.adapt_datetimefield_value(now),
                    reason,
                    total_time_ms,
                    submission_key,
                    outcome_rating,
                    locked.pk,
                ],
            )
        disputes_recount([locked.solution_id], locked=True)
        if reason in Assignment.RELEASING_REASONS:
            bad = int(reason == FinishReason.BAD_PROBLEM)
            Solution.objects.filter(pk=locked.solution_id).slots_change(
                campaign=campaign, slots=-1, reports=bad
            )
        screening = None
        if kind == Solution.Kind.SCREENING:
            screening = screening_evaluate(campaign=campaign, membership=membership)
        paused = kind == Solution.Kind.QUALITY_CONTROL and qc_pause_evaluate(
            campaign=campaign, membership=membership
        )
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
        rated_steps=rated,
        screening=screening,
        solution_kind=kind,
        paused=paused,
    )


# The columns of a submitted label, in the order ``labels_insert`` writes its values
# (``labeling.columns.STEP_LABEL`` checks them at import).
_LABEL_COLUMNS = STEP_LABEL.insert(
    "assignment_id",
    "step_id",
    "rating",
    "flagged",
    "time_spent_ms",
    "completion_index",
    "alternatives",
    "human_completion",
    "chosen_completion",
    "created_at",
)


def labels_insert(
    *, assignment_id: int, labels: list[_Label], step_ids: dict[int, int], now: datetime
) -> None:
    """Write the submitted labels in one INSERT (the hot path's biggest ORM cost otherwise)."""
    if not labels:
        return
    created = connection.ops.adapt_datetimefield_value(now)
    values = []
    for label in labels:
        correction = human_completion_from_text(label.human_completion)
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
    row = "(" + ", ".join(["%s"] * len(_LABEL_COLUMNS)) + ")"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO labeling_steplabel ({', '.join(_LABEL_COLUMNS)}) VALUES "
            + ", ".join([row] * len(labels)),
            values,
        )


def steps_with_drafts(*, assignment: Assignment) -> tuple[dict[int, int], dict[int, _Label]]:
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
        solution_kind=kind,
        replayed=True,
    )


def labels_final(
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
    # Lengths first: a list longer than the solution is refused before any item is looked at.
    for name, given in (("ratings", ratings), ("flags", flags), ("step_times_ms", step_times_ms)):
        if isinstance(given, list) and len(given) > n_steps:
            raise LabelsInvalid(
                name, f"The solution has {n_steps} steps; {len(given)} {name} were given."
            )
    if ratings is None:
        rated = sorted(i for i, d in drafts.items() if d.rating is not None)
        if rated != list(range(len(rated))):
            missing = next(i for i, j in enumerate([*rated, None]) if i != j)
            raise LabelsInvalid("ratings", f"Step {missing + 1} is not rated.")
        labels = [drafts[i] for i in rated]
    else:
        if not isinstance(ratings, list):
            raise LabelsInvalid("ratings", "Ratings are a list, one per step from step 0.")
        for i, r in enumerate(ratings):
            if r not in RATINGS or isinstance(r, bool):
                raise LabelsInvalid("ratings", f"Step {i + 1}: a rating is -1, 0 or 1, not {r!r}.")
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
            f"Step {first_negative + 1} is negative: with stop at first error no step after it "
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
                raise LabelsInvalid(
                    "step_times_ms", f"Step {label.index + 1}: {ms!r} is not a time."
                )
            label.time_spent_ms = clamp_ms(ms, maximum=STEP_TIME_MAX_MS)
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
                + ", or give up or report a bad problem.",
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


_FINISHED = (
    Assignment.Status.SUBMITTED,
    Assignment.Status.REJECTED,
    Assignment.Status.SUPERSEDED,
)


def assignment_skip(*, assignment: Assignment, annotator: AbstractBaseUser) -> Assignment:
    """Hand a solution back unlabelled: frees its slot, and it is never served to them again.

    Drafts are dropped. Skipping twice is harmless. Screening questions cannot be skipped: the
    score is over all of them.
    """
    with transaction.atomic():
        locked, _ = assignment_lock(assignment=assignment, annotator=annotator)
        if locked.status == Assignment.Status.SKIPPED:
            return locked
        if locked.status in _FINISHED:
            # Rejected work and earlier versions keep their labels: never dropped as drafts.
            raise AssignmentClosed("This assignment was already submitted.")
        if locked.solution_kind == Solution.Kind.SCREENING:
            raise AssignmentClosed("Screening questions cannot be skipped.")
        if locked.status == Assignment.Status.LEASED:
            Solution.objects.filter(pk=locked.solution_id).slots_change(
                campaign=locked.campaign, slots=-1
            )
        StepLabel.objects.filter(assignment=locked).delete()
        phase1_drafts_drop(assignment=locked)
        locked.status = Assignment.Status.SKIPPED
        locked.save(update_fields=["status"])
    return locked

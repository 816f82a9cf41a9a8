"""Phase 1 mode's drafts: candidates rated, chosen, written and taken back, one action at a time.

Every action names what it acts on (a candidate, a position), so a retried request changes
nothing twice: rating sets, choosing a chosen candidate again is a no-op, an undo names the
candidate it takes back."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from labeling.models import Assignment, CandidateLabel, Rating, StepCandidate, prefix_hash
from labeling.queue.errors import LabelsInvalid
from labeling.queue.leases import assignment_for_drafts
from labeling.queue.phase1.tree import (
    ANSWER_MARK,
    LETTERS,
    chosen_path,
    shared_candidates,
    undo_target,
)
from labeling.queue.shared import RATINGS

# Who acts: a view passes ``request.user`` as it is; anyone but the lease holder is refused
# (``NotLeaseHolder``) by the lock every action takes first.
Annotator = AbstractBaseUser | AnonymousUser


def candidate_rate(
    *,
    assignment: Assignment,
    annotator: Annotator,
    candidate_id: int,
    rating: int,
    flagged: bool = False,
    time_spent_ms: int | None = None,
) -> CandidateLabel:
    """Rate one candidate for the next step of the path (again: the new rating replaces)."""
    if rating not in RATINGS or isinstance(rating, bool):
        raise LabelsInvalid("rating", f"A rating is -1, 0 or 1, not {rating!r}.")
    with transaction.atomic():
        locked = assignment_for_drafts(assignment=assignment, annotator=annotator)
        candidate = _candidate_here(locked, candidate_id)
        label, _ = CandidateLabel.objects.update_or_create(
            assignment=locked,
            candidate=candidate,
            defaults={
                "position": candidate.position,
                "rating": rating,
                "flagged": flagged,
                "time_spent_ms": time_spent_ms,
                "changed_at": timezone.now(),
            },
        )
    return label


def candidate_choose(
    *, assignment: Assignment, annotator: Annotator, candidate_id: int
) -> CandidateLabel:
    """Continue the path with a candidate: every candidate here rated, this one not negative.

    Choosing the candidate already chosen (a retried request) changes nothing.
    """
    with transaction.atomic():
        locked = assignment_for_drafts(assignment=assignment, annotator=annotator)
        done = CandidateLabel.objects.filter(
            assignment=locked, candidate_id=candidate_id, chosen=True
        ).first()
        if done is not None:
            return done
        candidate = _candidate_here(locked, candidate_id)
        labels = _labels_here_all_rated(locked, candidate.position, candidate.prefix_hash)
        label = labels[candidate.pk]
        if label.rating == Rating.NEGATIVE:
            raise LabelsInvalid(
                "candidate", "A negative step cannot be continued: choose another or write one."
            )
        label.chosen = True
        label.changed_at = timezone.now()
        label.save(update_fields=["chosen", "changed_at"])
    return label


def step_write(
    *, assignment: Assignment, annotator: Annotator, position: int, text: str
) -> CandidateLabel:
    """Continue the path with a step the annotator wrote (PRM800K's ``human_completion``).

    ``position`` is the step the page showed; the same step written again at a position already
    passed (a retried request) changes nothing.
    """
    text = (text or "").strip()
    if not text:
        raise LabelsInvalid("text", "Write the step first: it is empty.")
    with transaction.atomic():
        locked = assignment_for_drafts(assignment=assignment, annotator=annotator)
        path = chosen_path(locked)
        if (
            position < len(path)
            and path[position].candidate.text == text
            and path[position].candidate.source == StepCandidate.Source.HUMAN
        ):
            return path[position]
        if path and ANSWER_MARK in path[-1].candidate.text:
            raise LabelsInvalid("text", "Your solution already gives its answer.")
        if position != len(path):
            raise LabelsInvalid(
                "position",
                f"Your solution is at step {len(path) + 1}, not step {position + 1}: "
                "reload the page.",
            )
        digest = prefix_hash([label.candidate.text for label in path])
        _labels_here_all_rated(locked, position, digest)
        candidate = StepCandidate.objects.create(
            solution_id=locked.solution_id,
            position=position,
            prefix_hash=digest,
            order=0,
            text=text,
            source=StepCandidate.Source.HUMAN,
            author=locked,
        )
        return CandidateLabel.objects.create(
            assignment=locked, candidate=candidate, position=position, chosen=True
        )


def phase1_undo(
    *, assignment: Assignment, annotator: Annotator, candidate_id: int | None = None
) -> int | None:
    """Take back the last action: the last rating at this position, else the last choice (a
    written step is removed with it). With ``candidate_id`` only while it is that candidate's,
    so a retried undo cannot take back the action before it. Returns the candidate's id."""
    with transaction.atomic():
        locked = assignment_for_drafts(assignment=assignment, annotator=annotator)
        last = undo_target(locked)
        if last is None or (candidate_id is not None and last.candidate_id != candidate_id):
            return None
        if not last.chosen:
            last.delete()
        elif last.candidate.source == StepCandidate.Source.HUMAN:
            last.candidate.delete()  # its label goes with it
        else:
            last.chosen = False
            last.save(update_fields=["chosen"])
        return last.candidate_id


def phase1_drafts_drop(*, assignment: Assignment) -> None:
    """Drop an assignment's phase 1 drafts and written steps (a skip: nothing was done)."""
    CandidateLabel.objects.filter(assignment=assignment).delete()
    StepCandidate.objects.filter(author=assignment).delete()


def _candidate_here(assignment: Assignment, candidate_id: int) -> StepCandidate:
    """A candidate for the next step of the assignment's path; else a clear refusal."""
    path = chosen_path(assignment)
    position = len(path)
    candidate = StepCandidate.objects.filter(
        Q(author__isnull=True) | Q(author=assignment),
        pk=candidate_id,
        solution_id=assignment.solution_id,
    ).first()
    if candidate is None:
        raise LabelsInvalid("candidate", "That candidate is not one of this solution's.")
    here = prefix_hash([label.candidate.text for label in path])
    if candidate.position != position or candidate.prefix_hash != here:
        raise LabelsInvalid(
            "candidate",
            f"That candidate is not a candidate for step {position + 1} of your solution "
            f"(it continues another prefix, at step {candidate.position + 1}): undo back to "
            "it first.",
        )
    if ANSWER_MARK in (path[-1].candidate.text if path else ""):
        raise LabelsInvalid("candidate", "Your solution already gives its answer.")
    return candidate


def _labels_here_all_rated(
    assignment: Assignment, position: int, digest: str
) -> dict[int, CandidateLabel]:
    """The assignment's labels of the candidates at this position, all of them rated."""
    shared = shared_candidates(assignment.solution_id, position, digest)
    labels = {
        label.candidate_id: label
        for label in CandidateLabel.objects.filter(assignment=assignment, candidate__in=shared)
    }
    unrated = [LETTERS[i % 26] for i, c in enumerate(shared) if c.pk not in labels]
    if unrated:
        raise LabelsInvalid(
            "candidate",
            f"Rate every candidate for step {position + 1} first ({', '.join(unrated)} "
            f"{'is' if len(unrated) == 1 else 'are'} not rated).",
        )
    return labels

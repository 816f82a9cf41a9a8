"""What the labelling page shows in phase 1 mode: the annotator's path and the candidates for its
next step, and opening a solution in this mode (its tree stored, a bare prefix sampled)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction

from common.jobs import DONE, FAILED, job_kind_of
from labeling.models import Assignment, CandidateLabel, Rating, Solution, StepCandidate, prefix_hash
from labeling.queue.phase1.sampling import NO_SAMPLER, sampling_start
from labeling.queue.phase1.tree import (
    ANSWER_MARK,
    LETTERS,
    chosen_path,
    shared_candidates,
    tree_store,
    undo_target,
)


@dataclass(frozen=True)
class CandidateView:
    """One candidate next step with the annotator's own rating of it (None: not rated yet)."""

    id: int
    letter: str
    text: str
    rating: int | None
    flagged: bool


@dataclass(frozen=True)
class PathStepView:
    """One step of the annotator's path: the candidate they chose, or the step they wrote."""

    index: int
    candidate_id: int
    text: str
    rating: int | None
    flagged: bool
    written: bool
    others: int  # the other candidates rated at this position

    @property
    def number(self) -> int:
        return self.index + 1


@dataclass(frozen=True)
class Phase1View:
    """An assignment in phase 1 mode as its annotator sees it: their path and what comes next."""

    path: list[PathStepView]
    candidates: list[CandidateView]
    # The candidate an undo takes back (the last rated at this position, else the last chosen).
    undo_candidate: int | None
    # Why no candidates could be sampled for this prefix (shown; the annotator writes instead).
    sampling_error: str | None = None
    # The job sampling candidates for this prefix while it waits or runs (the page polls it).
    sampling: Any = None

    @property
    def position(self) -> int:
        return len(self.path)

    @property
    def number(self) -> int:
        return self.position + 1

    @property
    def ended(self) -> bool:
        """The path gives the final answer: nothing comes after it."""
        return bool(self.path) and ANSWER_MARK in self.path[-1].text

    @property
    def all_rated(self) -> bool:
        return all(c.rating is not None for c in self.candidates)

    @property
    def stopped_at_error(self) -> bool:
        """Every candidate here is rated and one is negative: the annotator may stop here."""
        return (
            bool(self.candidates)
            and self.all_rated
            and any(c.rating == Rating.NEGATIVE for c in self.candidates)
        )

    @property
    def can_submit(self) -> bool:
        return self.ended or self.stopped_at_error

    @property
    def selected(self) -> int | None:
        """The candidate the keys act on first: the first unrated one, else the best rated."""
        for c in self.candidates:
            if c.rating is None:
                return c.id
        best = max(self.candidates, key=lambda c: c.rating or 0, default=None)
        return best.id if best is not None and best.rating != Rating.NEGATIVE else None

    @property
    def announcement(self) -> str:
        if self.ended:
            return "The solution gives its answer: press Enter to submit."
        rated = sum(c.rating is not None for c in self.candidates)
        return f"Step {self.number}: {rated} of {len(self.candidates)} candidates rated."


def phase1_applies(*, campaign, solution_kind: str) -> bool:
    """Phase 1 mode labels regular solutions; gold ones keep their fixed steps (their gold
    ratings are on those steps)."""
    return bool(campaign.phase1_mode) and solution_kind == Solution.Kind.REGULAR


def phase1_page(*, assignment: Assignment) -> Phase1View | None:
    """``phase1_open`` when phase 1 mode applies to the assignment's solution, else None. A
    prefix without candidates, when the campaign names an endpoint, gets a sampling job (a
    worker asks the model: the page polls it and never waits on the server); its failure or an
    empty answer is said, and the annotator writes the next step."""
    if not assignment.campaign.phase1_mode:
        return None
    kind = Solution.objects.filter(pk=assignment.solution_id).values_list("kind", flat=True).get()
    if not phase1_applies(campaign=assignment.campaign, solution_kind=kind):
        return None
    view = phase1_open(assignment=assignment)
    if view.candidates or view.ended or not assignment.campaign.phase1_endpoint:
        return view
    job = sampling_start(assignment=assignment, prefix=[s.text for s in view.path])
    if job is None:
        return replace(view, sampling_error=NO_SAMPLER)
    state = job_kind_of(job).state(job)
    if state == FAILED:
        said = f"Candidates could not be sampled ({job.error}): write the next step."
        return replace(view, sampling_error=said)
    if state == DONE:
        view = phase1_view(assignment)  # what it stored (or another job, for this prefix)
        if view.candidates:
            return view
        return replace(
            view, sampling_error="The endpoint sampled no candidate: write the next step."
        )
    return replace(view, sampling=job)


def phase1_open(*, assignment: Assignment) -> Phase1View:
    """The annotator's path and the candidates for its next step.

    The first time a solution is opened in this mode its own tree is stored as candidates
    (``tree_store``), so what is read here is the same for every annotator whose path agrees.
    """
    with transaction.atomic():
        tree_store(solution_id=assignment.solution_id)
    return phase1_view(assignment)


def phase1_view(assignment: Assignment) -> Phase1View:
    """The page's ``Phase1View`` of the assignment as stored now (no tree stored, nothing
    sampled: ``phase1_open`` and ``phase1_page`` do that first)."""
    path = chosen_path(assignment)
    texts = [label.candidate.text for label in path]
    # The other candidates rated at each position of the path, in one query.
    others = Counter(
        CandidateLabel.objects.filter(
            assignment=assignment, position__lt=len(path), chosen=False
        ).values_list("position", flat=True)
    )
    steps = []
    for i, label in enumerate(path):
        steps.append(
            PathStepView(
                index=i,
                candidate_id=label.candidate_id,
                text=label.candidate.text,
                rating=label.rating,
                flagged=label.flagged,
                written=label.candidate.source == StepCandidate.Source.HUMAN,
                others=others[i],
            )
        )
    candidates: list[CandidateView] = []
    if not (texts and ANSWER_MARK in texts[-1]):
        shared = shared_candidates(assignment.solution_id, len(path), prefix_hash(texts))
        mine = {
            label.candidate_id: label
            for label in CandidateLabel.objects.filter(assignment=assignment, candidate__in=shared)
        }
        candidates = [
            CandidateView(
                id=c.pk,
                letter=LETTERS[i % 26],
                text=c.text,
                rating=mine[c.pk].rating if c.pk in mine else None,
                flagged=bool(mine[c.pk].flagged) if c.pk in mine else False,
            )
            for i, c in enumerate(shared)
        ]
    last = undo_target(assignment)
    return Phase1View(
        path=steps, candidates=candidates, undo_candidate=last.candidate_id if last else None
    )

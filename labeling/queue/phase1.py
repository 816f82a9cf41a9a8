"""PRM800K's phase 1 on the labelling page: rate candidate next steps, choose one or write one.

In a campaign with ``phase1_mode`` on, a regular solution is labelled as PRM800K's phase 1
labelled its trees (``labeling.models.candidates``): at each position the annotator sees the
candidate next steps for the prefix they have built so far, rates each (-1/0/+1), and continues
with one of them or writes their own step; the chosen (or written) step becomes the next step of
their path. A step that gives the final answer (PRM800K's ``# Answer``) ends the path.

Candidates of the served solution's own tree are *imported*: the solution's steps and the
candidates its PRM800K labels carry (their texts only: never another annotator's rating, nor
their written steps), stored once per solution the first time it is opened in this mode. A path
that leaves that tree meets no candidates there; the annotator writes the next step.

On submission the path becomes a solution's steps and each position one ``StepLabel``, mapped
as the importer maps a PRM800K phase 1 line: the chosen candidate is the step (its index in
``chosen_completion`` and ``completion_index``), the other candidates are its ``alternatives``
with their ratings, a written step is the ``human_completion`` (``chosen_completion`` null), and
a last position rated without a choice (the annotator stopped at wrong steps) is a step whose
own completion is the first candidate. If the path is the served solution's steps, the labels go
there; else, when nobody labelled the served solution yet, its steps become the path (its tree
stays in its candidates); else the path is its own solution (found by content, or made), and the
assignment and its slot move to it.

Candidates for a prefix the tree lacks are *sampled*, when the campaign names a chat endpoint
(``Campaign.phase1_endpoint``): the app that owns generation (``imports``) registers a sampler
here (``candidate_sampler_register``, as ``learning`` registers its step scorers with
``labeling.scores``), asked outside any transaction when the page shows such a prefix; what it
answers is stored once per prefix, so every annotator on that prefix sees the same candidates.

Every action names what it acts on (a candidate, a position), so a retried request changes
nothing twice: rating sets, choosing a chosen candidate again is a no-op, an undo names the
candidate it takes back.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from labeling.grading import extract_answer
from labeling.models import (
    Assignment,
    CandidateLabel,
    FinishReason,
    Rating,
    Solution,
    Step,
    StepCandidate,
    StepLabel,
    prefix_hash,
)
from labeling.prm800k_steps import completions_split
from labeling.queue.drafts import _human_completion
from labeling.queue.errors import LabelsInvalid
from labeling.queue.leases import _assignment_for_drafts, _slot_hold
from labeling.queue.shared import RATINGS

log = logging.getLogger(__name__)

# Who acts: a view passes ``request.user`` as it is; anyone but the lease holder is refused
# (``NotLeaseHolder``) by the lock every action takes first.
Annotator = AbstractBaseUser | AnonymousUser

ANSWER_MARK = "# Answer"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


# --- What the page shows ---------------------------------------------------------------------


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
    """``phase1_open`` when phase 1 mode applies to the assignment's solution, else None; a
    prefix without candidates is sampled first when the campaign names an endpoint."""
    if not assignment.campaign.phase1_mode:
        return None
    kind = Solution.objects.filter(pk=assignment.solution_id).values_list("kind", flat=True).get()
    if not phase1_applies(campaign=assignment.campaign, solution_kind=kind):
        return None
    view = phase1_open(assignment=assignment)
    if view.candidates or view.ended or not assignment.campaign.phase1_endpoint:
        return view
    said = candidates_sample(assignment=assignment, prefix=[s.text for s in view.path])
    view = _view(assignment)
    return replace(view, sampling_error=said) if said else view


# --- Sampling candidates from an endpoint ----------------------------------------------------

# ``sampler(campaign=..., problem_id=..., prefix=[step texts], k=...)`` -> [(text, model)]:
# the candidate next steps for that prefix, or raises with a message fit for the annotator.
CandidateSampler = Callable[..., "list[tuple[str, str]]"]

_SAMPLERS: list[CandidateSampler] = []


def candidate_sampler_register(sampler: CandidateSampler) -> None:
    """Have phase 1 mode sample candidates with ``sampler`` (one sampler: the last wins)."""
    _SAMPLERS[:] = [sampler]


def candidates_sample(*, assignment: Assignment, prefix: list[str]) -> str | None:
    """Sample candidates for the assignment's solution after ``prefix`` and store them, unless
    someone stored candidates for that prefix meanwhile. Asked outside a transaction (a model
    takes seconds); returns what to tell the annotator when it failed, else None."""
    if not _SAMPLERS:
        return "No sampler is installed on this site: write the next step."
    campaign = assignment.campaign
    problem_id = (
        Solution.objects.filter(pk=assignment.solution_id)
        .values_list("problem_id", flat=True)
        .get()
    )
    try:
        sampled = _SAMPLERS[0](
            campaign=campaign, problem_id=problem_id, prefix=prefix, k=campaign.phase1_samples
        )
    except Exception as error:
        log.warning("phase 1 sampling failed for assignment %s: %s", assignment.pk, error)
        return f"Candidates could not be sampled ({error}): write the next step."
    digest = prefix_hash(prefix)
    texts: list[tuple[str, str]] = []
    for text, model in sampled:
        text = (text or "").strip()
        if text and text not in [t for t, _ in texts]:
            texts.append((text, model))
    with transaction.atomic():
        list(
            Solution.objects.select_for_update(no_key=True)
            .filter(pk=assignment.solution_id)
            .values_list("pk", flat=True)
        )
        if _shared(assignment.solution_id, len(prefix), digest):
            return None
        StepCandidate.objects.bulk_create(
            StepCandidate(
                solution_id=assignment.solution_id,
                position=len(prefix),
                prefix_hash=digest,
                order=order,
                text=text,
                source=StepCandidate.Source.SAMPLED,
                model=model[:200],
            )
            for order, (text, model) in enumerate(texts)
        )
    return None if texts else "The endpoint sampled no candidate: write the next step."


def phase1_open(*, assignment: Assignment) -> Phase1View:
    """The annotator's path and the candidates for its next step.

    The first time a solution is opened in this mode its own tree is stored as candidates
    (``_tree_store``), so what is read here is the same for every annotator whose path agrees.
    """
    with transaction.atomic():
        _tree_store(solution_id=assignment.solution_id)
    return _view(assignment)


# --- Drafts ----------------------------------------------------------------------------------


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
        locked = _assignment_for_drafts(assignment=assignment, annotator=annotator)
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
        locked = _assignment_for_drafts(assignment=assignment, annotator=annotator)
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
        locked = _assignment_for_drafts(assignment=assignment, annotator=annotator)
        path = _path(locked)
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
        locked = _assignment_for_drafts(assignment=assignment, annotator=annotator)
        last = _undo_target(locked)
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


# --- Submission ------------------------------------------------------------------------------


@dataclass
class _PathLabel:
    text: str
    rating: int | None
    flagged: bool | None
    completion_index: int | None
    alternatives: list[dict]
    human_completion: dict | None
    chosen_completion: int | None
    time_spent_ms: int | None


def phase1_store(*, assignment: Assignment, finish_reason: str | None) -> tuple[int, str]:
    """Store a locked phase 1 assignment's path as step labels of the solution it becomes.

    Called by ``assignment_submit`` inside its transaction; may move the assignment (and its
    slot) to another solution (see the module's docstring). Returns the number of rated steps
    and the finish reason.
    """
    _slot_hold(assignment=assignment)
    view = _view(assignment)
    reason = _finish_reason(view, finish_reason)
    labels = _path_labels(assignment)
    if not labels:
        return 0, reason
    solution_id = _path_solution(assignment, [label.text for label in labels])
    steps = dict(Step.objects.filter(solution_id=solution_id).values_list("index", "pk"))
    StepLabel.objects.filter(assignment=assignment).delete()
    StepLabel.objects.bulk_create(
        StepLabel(
            assignment_id=assignment.pk,
            step_id=steps[i],
            rating=label.rating,
            flagged=label.flagged,
            time_spent_ms=label.time_spent_ms,
            completion_index=label.completion_index,
            alternatives=label.alternatives,
            human_completion=label.human_completion,
            chosen_completion=label.chosen_completion,
        )
        for i, label in enumerate(labels)
    )
    return sum(label.rating is not None for label in labels), reason


def _finish_reason(view: Phase1View, given: str | None) -> str:
    if given in Assignment.RELEASING_REASONS:
        return str(given)
    if given not in (None, "", FinishReason.SOLUTION, FinishReason.FOUND_ERROR):
        raise LabelsInvalid(
            "finish_reason", f"Finish reason is one of {', '.join(FinishReason.values)}."
        )
    if view.ended and given != FinishReason.FOUND_ERROR:
        return FinishReason.SOLUTION
    if view.stopped_at_error and given != FinishReason.SOLUTION:
        return FinishReason.FOUND_ERROR
    raise LabelsInvalid(
        "ratings",
        f"Not submitted: your solution has no final answer yet. At step {view.number} rate every "
        "candidate, then continue with one or write your own (a step with '# Answer' ends the "
        "solution); or stop here after rating a candidate negative, or give up.",
    )


def _path_labels(assignment: Assignment) -> list[_PathLabel]:
    """The path as PRM800K's phase 1 records it: one entry per position (module docstring)."""
    path = _path(assignment)
    out = []
    texts: list[str] = []
    for position in range(len(path) + 1):
        digest = prefix_hash(texts)
        shared = _shared(assignment.solution_id, position, digest)
        mine = {
            label.candidate_id: label
            for label in CandidateLabel.objects.filter(assignment=assignment, candidate__in=shared)
        }
        completions: list[dict[str, Any]] = [
            {
                "text": c.text,
                "rating": mine[c.pk].rating if c.pk in mine else None,
                "flagged": mine[c.pk].flagged if c.pk in mine else None,
            }
            for c in shared
        ]
        # Each rating carries the time since the position was shown: the last is the total.
        time_ms = max((label.time_spent_ms or 0 for label in mine.values()), default=0) or None
        if position == len(path):
            if not mine:
                break
            own, chosen, human, text = 0, None, None, shared[0].text
        elif path[position].candidate.source == StepCandidate.Source.HUMAN:
            text = path[position].candidate.text
            own, chosen, human = None, None, _human_completion(text)
        else:
            text, human = path[position].candidate.text, None
            own = chosen = [c.pk for c in shared].index(path[position].candidate_id)
        kept, alternatives = completions_split(completions, own)
        rating, flagged = (None, False) if kept is None else (kept["rating"], kept["flagged"])
        out.append(
            _PathLabel(
                text=text,
                rating=rating,
                flagged=flagged,
                completion_index=own,
                alternatives=alternatives,
                human_completion=human,
                chosen_completion=chosen,
                time_spent_ms=time_ms,
            )
        )
        texts.append(text)
    return out


def _path_solution(assignment: Assignment, texts: list[str]) -> int:
    """The id of the solution whose steps are ``texts``, moving the assignment there if needed."""
    served = (
        Solution.objects.select_for_update(no_key=True)
        .select_related("problem")
        .get(pk=assignment.solution_id)
    )
    steps = list(
        Step.objects.filter(solution=served).order_by("index").values_list("text", flat=True)
    )
    if steps == texts:
        return served.pk
    answer = extract_answer(texts[-1]) if ANSWER_MARK in texts[-1] else None
    digest = Solution.hash_content(served.problem.text, texts, answer)
    same = (
        Solution.objects.filter(campaign_id=served.campaign_id, content_hash=digest)
        .exclude(pk=served.pk)
        .first()
    )
    if same is None and not StepLabel.objects.filter(step__solution=served).exists():
        # Nobody labelled the served steps: they were a proposal, and become the path (the
        # tree they came from stays in the solution's candidates).
        Step.objects.filter(solution=served).delete()
        Step.objects.bulk_create(
            Step(solution=served, index=i, text=text) for i, text in enumerate(texts)
        )
        Solution.objects.filter(pk=served.pk).update(
            content_hash=digest, answer=answer, answer_is_correct=None, pre_generated=False
        )
        return served.pk
    target = same
    if target is None:
        target = Solution.objects.create(
            campaign_id=served.campaign_id,
            problem=served.problem,
            generator=served.generator,
            kind=served.kind,
            pre_generated=False,
            answer=answer,
            priority=served.priority,
            source="phase1",
            source_ref=served.source_ref,
            import_job_id=served.import_job_id,
            content_hash=digest,
        )
        Step.objects.bulk_create(
            Step(solution=target, index=i, text=text) for i, text in enumerate(texts)
        )
    campaign = assignment.campaign
    # The slot moves with the assignment: the served solution is open again for others.
    Solution.objects.filter(pk=served.pk).slots_change(campaign=campaign, slots=-1)
    Solution.objects.filter(pk=target.pk).slots_change(campaign=campaign, slots=1)
    Assignment.objects.filter(pk=assignment.pk).update(solution=target)
    assignment.solution_id = target.pk
    return target.pk


# --- Reading the tree and the path -----------------------------------------------------------


def _tree_store(*, solution_id: int) -> None:
    """Store the served solution's own tree as candidates, once: at each position of its steps,
    the candidates its labels carry (their texts, in order) or else the step itself."""
    stored = StepCandidate.objects.filter(
        solution_id=solution_id, source=StepCandidate.Source.IMPORTED
    )
    # Nearly always stored already: checked before any lock (a locked solution is one the
    # queue's claims pass over).
    if stored.exists():
        return
    # The solution's row lock: two annotators opening it at once store its tree once.
    locked = Solution.objects.select_for_update(no_key=True).filter(pk=solution_id)
    if not list(locked.values_list("pk", flat=True)) or stored.exists():
        return
    steps = list(Step.objects.filter(solution_id=solution_id).order_by("index"))
    labels = (
        StepLabel.objects.filter(step__solution_id=solution_id)
        .exclude(assignment__source="")  # imported labels only: never another annotator's work
        .order_by("assignment_id")
    )
    by_step: dict[int, list[StepLabel]] = {}
    for label in labels:
        by_step.setdefault(label.step_id, []).append(label)
    rows: list[StepCandidate] = []
    texts: list[str] = []
    for step in steps:
        seen: list[str] = []
        for label in by_step.get(step.pk, []):
            for c in label.completions(step.text):
                if c.get("text") and c["text"] not in seen:
                    seen.append(c["text"])
        if not by_step.get(step.pk):
            seen = [step.text]
        digest = prefix_hash(texts)
        rows += [
            StepCandidate(
                solution_id=solution_id,
                position=step.index,
                prefix_hash=digest,
                order=order,
                text=text,
                source=StepCandidate.Source.IMPORTED,
            )
            for order, text in enumerate(seen)
        ]
        texts.append(step.text)
    StepCandidate.objects.bulk_create(rows)


def _shared(solution_id: int, position: int, digest: str) -> list[StepCandidate]:
    """The candidates everyone whose path is this prefix sees (not anyone's written step)."""
    return list(
        StepCandidate.objects.filter(
            solution_id=solution_id, position=position, prefix_hash=digest, author__isnull=True
        ).order_by("order", "pk")
    )


def _path(assignment: Assignment) -> list[CandidateLabel]:
    """The chosen candidates of the assignment, one per position from 0."""
    chosen = list(
        CandidateLabel.objects.filter(assignment=assignment, chosen=True)
        .select_related("candidate")
        .order_by("position")
    )
    return [label for i, label in enumerate(chosen) if label.position == i]


def _candidate_here(assignment: Assignment, candidate_id: int) -> StepCandidate:
    """A candidate for the next step of the assignment's path; else a clear refusal."""
    path = _path(assignment)
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
    shared = _shared(assignment.solution_id, position, digest)
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


def _undo_target(assignment: Assignment) -> CandidateLabel | None:
    path = _path(assignment)
    rated_here = (
        CandidateLabel.objects.filter(assignment=assignment, position=len(path), chosen=False)
        .select_related("candidate")
        .order_by("-changed_at", "-pk")
        .first()
    )
    return rated_here or (path[-1] if path else None)


def _view(assignment: Assignment) -> Phase1View:
    path = _path(assignment)
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
        shared = _shared(assignment.solution_id, len(path), prefix_hash(texts))
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
    last = _undo_target(assignment)
    return Phase1View(
        path=steps, candidates=candidates, undo_candidate=last.candidate_id if last else None
    )

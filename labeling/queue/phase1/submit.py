"""Phase 1 mode's submission: the annotator's path stored as step labels of the solution it is.

On submission the path becomes a solution's steps and each position one ``StepLabel``, mapped
as the importer maps a PRM800K phase 1 line: the chosen candidate is the step (its index in
``chosen_completion`` and ``completion_index``), the other candidates are its ``alternatives``
with their ratings, a written step is the ``human_completion`` (``chosen_completion`` null), and
a last position rated without a choice (the annotator stopped at wrong steps) is a step whose
own completion is the first candidate. If the path is the served solution's steps, the labels go
there; else, when nobody labelled the served solution yet, its steps become the path (its tree
stays in its candidates); else the path is its own solution (found by content, or made), and the
assignment and its slot move to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labeling.grading import extract_answer
from labeling.models import (
    Assignment,
    CandidateLabel,
    FinishReason,
    Solution,
    Step,
    StepCandidate,
    StepLabel,
    prefix_hash,
)
from labeling.prm800k_steps import completions_split
from labeling.queue.errors import LabelsInvalid
from labeling.queue.leases import slot_hold
from labeling.queue.phase1.tree import ANSWER_MARK, chosen_path, shared_candidates
from labeling.queue.phase1.view import Phase1View, phase1_view
from labeling.queue.shared import human_completion_from_text


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
    slot_hold(assignment=assignment)
    view = phase1_view(assignment)
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
    path = chosen_path(assignment)
    out = []
    texts: list[str] = []
    for position in range(len(path) + 1):
        digest = prefix_hash(texts)
        shared = shared_candidates(assignment.solution_id, position, digest)
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
            own, chosen, human = None, None, human_completion_from_text(text)
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

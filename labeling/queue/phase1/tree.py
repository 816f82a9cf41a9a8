"""Phase 1 mode's storage as the other modules read it: a solution's own tree stored as
candidates, the candidates everyone on a prefix sees, an annotator's path and their last action."""

from __future__ import annotations

from labeling.models import (
    Assignment,
    CandidateLabel,
    Solution,
    Step,
    StepCandidate,
    StepLabel,
    prefix_hash,
)

ANSWER_MARK = "# Answer"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def tree_store(*, solution_id: int) -> None:
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


def shared_candidates(solution_id: int, position: int, digest: str) -> list[StepCandidate]:
    """The candidates everyone whose path is this prefix sees (not anyone's written step)."""
    return list(
        StepCandidate.objects.filter(
            solution_id=solution_id, position=position, prefix_hash=digest, author__isnull=True
        ).order_by("order", "pk")
    )


def chosen_path(assignment: Assignment) -> list[CandidateLabel]:
    """The chosen candidates of the assignment, one per position from 0."""
    chosen = list(
        CandidateLabel.objects.filter(assignment=assignment, chosen=True)
        .select_related("candidate")
        .order_by("position")
    )
    return [label for i, label in enumerate(chosen) if label.position == i]


def undo_target(assignment: Assignment) -> CandidateLabel | None:
    path = chosen_path(assignment)
    rated_here = (
        CandidateLabel.objects.filter(assignment=assignment, position=len(path), chosen=False)
        .select_related("candidate")
        .order_by("-changed_at", "-pk")
        .first()
    )
    return rated_here or (path[-1] if path else None)

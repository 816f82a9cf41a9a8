"""Machine labels: where rollouts and a judge agree on a step.

The Qwen team's "Lessons of Developing Process Reward Models" kept the Monte-Carlo labels that an
LLM judge agreed with (consensus filtering). Here a step's machine label is :func:`consensus` of
its ``StepEvidence`` rows, and :func:`machine_labels_read` reads them for a batch of solutions.
Exports use them under the policy ``machine_labels``: the reader's ``SolutionData.machine_kept``
says which of them a policy exports, ``exports.examples`` puts them beside (``consensus``) or
after (``fill``) the human labels, and each is exported with the source
``exports.policy.MACHINE``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from labeling.models import StepEvidence

Kind = StepEvidence.Kind


@dataclass(frozen=True, slots=True)
class MachineLabel:
    """A step's machine label (+1 or -1) and the models whose agreement gave it."""

    rating: int
    models: tuple[str, ...]  # "rollout:MODEL" and "judge:MODEL", sorted


def says_correct(kind: str, value: float) -> bool:
    """What one piece of evidence says of its step.

    Rollouts say correct when at least one completion from the step reaches the right answer
    (Math-Shepherd's hard estimate), wrong when none does; a judge stores 1.0 for the steps before
    the first error it names (correct) and 0.0 for that step (wrong).
    """
    return value > 0.0 if kind == Kind.ROLLOUT else value >= 1.0


def consensus(evidence: Iterable[tuple[str, str, float]]) -> MachineLabel | None:
    """The machine label of one step from its ``(kind, model, value)`` rows, or None.

    There is one only where rollouts and a judge agree: at least one rollout row and one judge row,
    and every row (each model of each kind) says the same. Both correct: +1; both wrong: -1. A step
    after a judge's first error has no judge row, so no machine label.
    """
    rows = list(evidence)
    kinds = {kind for kind, _, _ in rows}
    if kinds != {Kind.ROLLOUT, Kind.JUDGE}:
        return None
    words = {says_correct(kind, value) for kind, _, value in rows}
    if len(words) != 1:
        return None
    models = tuple(sorted({f"{kind}:{model}" for kind, model, _ in rows}))
    return MachineLabel(1 if words.pop() else -1, models)


def machine_labels_read(solutions) -> dict[int, dict[int, MachineLabel]]:
    """solution id -> step index -> machine label, for the solutions of a queryset of ids."""
    grouped: dict[tuple[int, int], list[tuple[str, str, float]]] = {}
    for solution_id, index, kind, model, value in StepEvidence.objects.filter(
        solution_id__in=solutions
    ).values_list("solution_id", "step__index", "kind", "model", "value"):
        grouped.setdefault((solution_id, index), []).append((kind, model, value))
    out: dict[int, dict[int, MachineLabel]] = {}
    for (solution_id, index), rows in grouped.items():
        label = consensus(rows)
        if label is not None:
            out.setdefault(solution_id, {})[index] = label
    return out

"""What the ``machines-disagree`` strategy orders by: how much the machines disagree on each open
solution's steps.

The machines are the campaign's own PRM (the run's model), the served PRM when the campaign has
one (``machines.served``), and the machine evidence (``labeling.models.StepEvidence``: rollout
values and a judge's verdicts, asked for by ``machines.evidence``). ``machine_conflicts`` gathers
their words on the open solutions that have any besides the PRM's and measures each with
``machine_conflict``; the run attaches the result to its ``Scored`` items.
Only those solutions are scored again for their steps' P(correct) (the run's scoring keeps
solution-level figures), so the cost grows with the evidence, not with the queue.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from labeling.models import Campaign, StepEvidence
from learning.scoring import open_solutions, solution_texts


def machine_conflict(prm: Sequence[float], others: Mapping[int, Sequence[float]]) -> float | None:
    """How much the machines disagree on a solution: the largest, over its steps, of the spread
    (highest minus lowest) of the P(correct) each machine gives the step: ``prm[i]``, the PRM's,
    and ``others[i]``, every other machine's word on step ``i`` (a rollout value: the share of
    completions from the step reaching the answer; a judge's verdict: 1 sound so far, 0 the
    first error; a served PRM's score). None when no other machine spoke of any of its steps:
    the PRM alone is no disagreement."""
    worst: float | None = None
    for index, words in others.items():
        values = [float(v) for v in words if v is not None and math.isfinite(v)]
        if not values:
            continue
        if 0 <= index < len(prm):
            values.append(float(prm[index]))
        spread = max(values) - min(values)
        worst = spread if worst is None else max(worst, spread)
    return worst


def machine_words(*, campaign: Campaign) -> dict[int, dict[int, list[float]]]:
    """Every other machine's P(correct) of each step, by open solution id and step index: the
    rollout values and judge verdicts stored for the campaign's open regular solutions, and the
    served PRM's step scores where it scored them."""
    open_ids = open_solutions(campaign).values("pk")
    words: dict[int, dict[int, list[float]]] = {}
    for solution_id, index, value in StepEvidence.objects.filter(
        solution_id__in=open_ids
    ).values_list("solution_id", "step__index", "value"):
        words.setdefault(solution_id, {}).setdefault(index, []).append(value)
    if campaign.al_scoring_endpoint:
        from machines.served import served_scores

        still_open = set(open_ids.values_list("pk", flat=True))
        served = served_scores(campaign=campaign).values_list("solution_id", "step_scores")
        for solution_id, steps in served:
            if solution_id in still_open:
                for index, value in enumerate(steps or []):
                    words.setdefault(solution_id, {}).setdefault(index, []).append(float(value))
    return words


def machine_conflicts(*, campaign: Campaign, scorer) -> dict[int, float]:
    """``machine_conflict`` of every open solution some machine besides the PRM spoke of, with
    ``scorer`` (the run's PRM) for the PRM's word on each step; without one (no labels to train
    the campaign's own on yet) the other machines' words alone."""
    words = machine_words(campaign=campaign)
    if not words:
        return {}
    out: dict[int, float] = {}
    if scorer is None:
        prm_words: dict[int, list[float]] = {}
    else:
        texts = list(solution_texts(campaign=campaign, ids=set(words)))
        probs = scorer.score([(problem, steps) for _, problem, steps in texts])
        prm_words = {sid: p for (sid, _, _), p in zip(texts, probs, strict=True)}
    for solution_id, others in words.items():
        conflict = machine_conflict(prm_words.get(solution_id, []), others)
        if conflict is not None:
            out[solution_id] = conflict
    return out

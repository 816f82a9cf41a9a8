"""``prm800k``: PRM800K's raw label lines, field for field, one per submitted assignment.

Rejected work and superseded versions (policy options ``include_rejected``,
``include_superseded``) carry an extra ``stepwise_status`` field (and the reviewer's comment in
``stepwise_review_comment``).

Only the selection options of the policy apply: the lines keep every rating as it was given,
so an imported PRM800K file comes back as it went in. Under ``machine_labels`` each line names
its labels' sources (``stepwise_label_sources``) and the machine labels come as one more line
(``machines.labels``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from exports.formats.base import (
    RAW_NAMES,
    RAW_OPTIONS,
    Format,
    JsonlWriter,
    utc_naive_iso,
    with_sources,
)
from exports.policy import HUMAN, MACHINE, LabelPolicy
from exports.reader import SolutionData
from labeling.models import FinishReason, Solution
from machines.labels import MachineLabel


def prm800k_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """One PRM800K label line per assignment, rebuilt field for field (see labeling.models).

    The question's shape follows the phase, as PRM800K's does: a phase 1 question (the labeler
    built the path) holds the problem and its answer only; a phase 2 one also the reference
    solution and the pre-generated steps, answer and verifier score.
    """
    question: dict[str, Any] = {
        "problem": solution.problem_text,
        "ground_truth_answer": solution.ground_truth_answer,
    }
    if solution.pre_generated:
        question["ground_truth_solution"] = solution.ground_truth_solution
        question["pre_generated_steps"] = solution.steps
        question["pre_generated_answer"] = solution.answer
        score = solution.verifier_score
        # JSON has no NaN: a non-finite score (written before imports refused them) is null.
        finite = score is None or math.isfinite(score)
        question["pre_generated_verifier_score"] = score if finite else None
    for a in solution.assignments:
        steps = [
            {
                "completions": lab.completions(solution.steps[lab.index]),
                "human_completion": lab.human_completion,
                "chosen_completion": lab.chosen_completion,
            }
            for lab in a.labels
        ]
        record = {
            "labeler": a.annotator,
            "timestamp": utc_naive_iso(a.submitted_at),
            "generation": solution.generation,
            "is_quality_control_question": solution.kind == Solution.Kind.QUALITY_CONTROL,
            "is_initial_screening_question": solution.kind == Solution.Kind.SCREENING,
            "question": question,
            "label": {
                "steps": steps,
                "total_time": a.total_time_ms,
                "finish_reason": a.finish_reason or None,
            },
        }
        if solution.probabilities:
            # annotators=weighted: each labelled step's P(positive) from every annotator's
            # ratings (``exports.weighted``); PRM800K has no such field, so only then.
            weighted: list[float | None] = [
                solution.probabilities.get(lab.index) for lab in a.labels
            ]
            # The record's type is inferred from its PRM800K fields; this one is ours.
            record["stepwise_weighted_probabilities"] = weighted  # type: ignore[assignment]
        if not a.is_current:
            # History asked for by include_rejected / include_superseded; PRM800K has no such
            # field, so current lines stay exactly PRM800K's.
            record["stepwise_status"] = a.status
            if a.review_comment:
                record["stepwise_review_comment"] = a.review_comment
        ratings = [lab.rating for lab in a.labels]
        if with_sources(policy):
            sources = [HUMAN] * len(ratings)
            record["stepwise_label_sources"] = sources  # type: ignore[assignment]
            yield record, ratings, sources
        else:
            yield record, ratings
    machine = solution.machine_prefix(policy)
    if machine:
        yield _machine_line(solution, question, machine)


def _machine_line(solution: SolutionData, question: dict, machine: list[MachineLabel]) -> tuple:
    """The machine labels as a line of their own: the steps from the first while rollouts and a
    judge agree, as if a labeler called ``machine:consensus`` had rated them."""
    ratings = [m.rating for m in machine]
    finish: str | None = None
    if ratings[-1] < 0:
        finish = FinishReason.FOUND_ERROR.value
    elif len(ratings) == len(solution.steps):
        finish = FinishReason.SOLUTION.value
    sources = [MACHINE] * len(ratings)
    record = {
        "labeler": MACHINE,
        "timestamp": None,
        "generation": solution.generation,
        "is_quality_control_question": solution.kind == Solution.Kind.QUALITY_CONTROL,
        "is_initial_screening_question": solution.kind == Solution.Kind.SCREENING,
        "question": question,
        "label": {
            "steps": [
                {
                    "completions": [{"text": text, "rating": rating, "flagged": None}],
                    "human_completion": None,
                    "chosen_completion": None,
                }
                for text, rating in zip(solution.steps, ratings, strict=False)
            ],
            "total_time": None,
            "finish_reason": finish,
        },
        "stepwise_label_sources": sources,
        "stepwise_machine_models": sorted({name for m in machine for name in m.models}),
    }
    return record, ratings, sources


PRM800K = Format(
    "prm800k",
    ".jsonl",
    JsonlWriter,
    prm800k_rows,
    RAW_OPTIONS,
    RAW_NAMES,
    description="PRM800K raw label lines (JSONL)",
)

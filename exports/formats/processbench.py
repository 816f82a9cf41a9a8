"""``processbench``: the whole solution and the index of its first wrong step.

One record: ``{"id", "generator", "problem", "steps", "final_answer_correct", "label"}``.
"""

from __future__ import annotations

from collections.abc import Iterator

from exports.examples import labelled_paths
from exports.formats.base import (
    ALL_OPTIONS,
    BINARY_NAMES,
    Format,
    JsonlWriter,
    add_sources,
    with_sources,
)
from exports.policy import HUMAN, LabelPolicy
from exports.reader import SolutionData


def processbench_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """ProcessBench: the whole solution and the index of its first error, or -1 if none.

    -1 needs every step labelled non-negative; a path that stops early without an error says
    nothing about the rest and gives no record. Negative candidates give a record each: the path
    before them plus the bad step, with the error at its end (the way ProcessBench-style
    evaluations use PRM800K); positive candidates are not whole solutions and give none.
    """
    n_steps = len(solution.steps)
    base = f"{solution.id}"
    sourced = with_sources(policy)
    for path in labelled_paths(solution, policy):
        each = policy.annotators == "each" or path.machine
        suffix = f"-{path.annotator}" if path.annotator and each else ""
        if False in path.labels:
            first = path.labels.index(False)
        elif len(path.labels) == n_steps:
            first = -1
        else:
            first = None
        if first is not None:
            counted = [True] * n_steps if first < 0 else [True] * first + [False]
            judged = len(counted)
            counted += [None] * (n_steps - len(counted))
            row = {
                "id": base + suffix,
                "generator": solution.generator,
                "problem": solution.problem_text,
                "steps": solution.steps,
                "final_answer_correct": solution.answer_is_correct,
                "label": first,
            }
            if sourced:
                # The sources of the labels the verdict stands on: the steps up to its error.
                sources = path.sources[:judged]
                yield add_sources(row, sources, path.models), counted, sources
            else:
                yield row, counted
        for k, (position, text, value) in enumerate(path.candidates):
            if value or not all(path.labels[:position]):
                continue
            row = {
                "id": f"{base}{suffix}-alt{k}",
                "generator": solution.generator,
                "problem": solution.problem_text,
                "steps": [*solution.steps[:position], text],
                "final_answer_correct": None,
                "label": position,
            }
            counted = [True] * position + [False]
            if sourced:
                sources = [*path.sources[:position], HUMAN]
                yield add_sources(row, sources, path.models), counted, sources
            else:
                yield row, counted


PROCESSBENCH = Format(
    "processbench",
    ".jsonl",
    JsonlWriter,
    processbench_rows,
    # A record holds the whole solution, so there is nothing to cut.
    tuple(o for o in ALL_OPTIONS if o != "cut_after_first_negative"),
    BINARY_NAMES,
    description="ProcessBench (JSONL, label = first wrong step or -1)",
)

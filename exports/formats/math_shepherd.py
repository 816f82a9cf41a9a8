"""``math-shepherd``: OpenRLHF / Math-Shepherd.

One record per example: ``{"input": "... Step 1: ... ки", "label": ["+"]}``.
"""

from __future__ import annotations

from collections.abc import Iterator

from exports.examples import training_examples_sourced
from exports.formats.base import (
    ALL_OPTIONS,
    BINARY_NAMES,
    Format,
    JsonlWriter,
    add_sources,
    with_sources,
)
from exports.formats.options import DEFAULT_STEP_TAG, option_defaults
from exports.policy import LabelPolicy
from exports.reader import SolutionData


def math_shepherd_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """Math-Shepherd / OpenRLHF: steps numbered and tagged in one string, ``+``/``-`` labels.

    The tag must be a single token for the trainer; any copy of it inside a step's text is
    removed, or the trainer would read a label where there is none.
    """
    tag = options.get("step_tag", DEFAULT_STEP_TAG)
    sourced = with_sources(policy)
    for texts, labels, _, sources, models in training_examples_sourced(solution, policy):
        body = "\n".join(
            f"Step {k}: {text.replace(tag, '')} {tag}" for k, text in enumerate(texts, 1)
        )
        marks = ["+" if v else "-" for v in labels]
        row = {"input": f"{solution.problem_text} {body}", "label": marks}
        if sourced:
            yield add_sources(row, sources, models), labels, sources
        else:
            yield row, labels


MATH_SHEPHERD = Format(
    "math-shepherd",
    ".jsonl",
    JsonlWriter,
    math_shepherd_rows,
    ALL_OPTIONS,
    BINARY_NAMES,
    options=option_defaults("math-shepherd"),
    description="Math-Shepherd / OpenRLHF (JSONL, step tag and +/-)",
)

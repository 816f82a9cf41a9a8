"""PRM800K's step-label codec: how one ``label.steps[i]`` of PRM800K stores a step's own
completion among its alternatives, and how a ``StepLabel`` keeps them apart.

PRM800K lists every completion shown at a step (``completions``), marks the one the path went on
with (``chosen_completion``) or gives the step the annotator wrote instead (``human_completion``,
``chosen_completion`` null). A ``StepLabel`` keeps the step's own completion as its ``rating`` and
``flagged``, the others as ``alternatives``, and the own one's position as ``completion_index``
(null for a written step) so the list is rebuilt in PRM800K's order. The importers of both
PRM800K files, the phase 1 labelling page and the PRM800K export all read or write this shape,
so it lives here once; ``StepLabel.completions`` is the way back.
"""

from __future__ import annotations

from typing import Any

__all__ = ["completions_join", "completions_split", "own_completion"]


def own_completion(*, chosen: int | None, human: Any) -> int | None:
    """Which completion is the step's own: the chosen one; none when the annotator wrote the
    step; else the first (phase 2 rates the pre-generated step, completion 0, and so does phase
    1's last position, where nothing was chosen)."""
    if chosen is not None:
        return chosen
    return None if human is not None else 0


def completions_split(
    completions: list[dict[str, Any]], own: int | None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The step's own completion (None for a written step) and the alternatives beside it."""
    if own is None:
        return None, completions
    return completions[own], completions[:own] + completions[own + 1 :]


def completions_join(
    alternatives: list[dict[str, Any]], own: int | None, mine: dict[str, Any]
) -> list[dict[str, Any]]:
    """PRM800K's ``completions``: the alternatives with the step's own completion (``mine``)
    back at its index ``own``; a written step (``own`` None) has the alternatives alone."""
    out = list(alternatives)
    if own is not None:
        out.insert(own, mine)
    return out

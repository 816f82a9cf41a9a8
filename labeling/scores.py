"""Per-step scores of a solution by scorers that live above this app, for the pages here.

The data browser's item page shows, beside the human ratings, each step's score by the
campaign's PRM. The PRM lives in ``learning``, above ``labeling``, so ``labeling`` cannot ask it
directly: ``learning`` registers a scorer when it is ready (as every app registers its job kinds
with ``common.jobs``), and the page calls :func:`step_scores`. A scorer is a function of
``campaign_id`` and ``solution_id`` that answers one P(step is correct) per step, or None when it
has nothing to say about this solution (no model yet). Events (``labeling.events``) are for
things that happened; this is an extension point, asked for an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

StepScorer = Callable[..., "list[float] | None"]

_SCORERS: dict[str, StepScorer] = {}


def step_scorer_register(name: str, scorer: StepScorer) -> None:
    """Have the item page show this scorer's scores under ``name`` (e.g. "PRM")."""
    _SCORERS[name] = scorer


def step_scorer_unregister(name: str) -> None:
    _SCORERS.pop(name, None)


def step_scores(*, campaign_id: int, solution_id: int) -> dict[str, list[float]]:
    """Each registered scorer's per-step scores of a solution, by name, in registration order.

    A scorer that has nothing to say, or fails, is left out: a page never fails for a score.
    """
    out: dict[str, list[float]] = {}
    for name, scorer in list(_SCORERS.items()):
        try:
            scores = scorer(campaign_id=campaign_id, solution_id=solution_id)
        except Exception:
            log.exception("step scorer %s failed on solution %s", name, solution_id)
            continue
        if scores is not None:
            out[name] = scores
    return out

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
# Scorers that can answer from what they keep without computing (``cached_only=True``), and
# raise ``ScoresPending`` when they would have to compute: loading a model costs seconds.
_DEFERRABLE: set[str] = set()


class ScoresPending(Exception):
    """A deferrable scorer asked for kept scores only has none yet: computing them is costly."""


def step_scorer_register(name: str, scorer: StepScorer, *, deferrable: bool = False) -> None:
    """Have the item page show this scorer's scores under ``name`` (e.g. "PRM"). A
    ``deferrable`` scorer takes ``cached_only``: the page then asks for its scores in a request
    of their own once it is shown (``step_scores_deferred``)."""
    _SCORERS[name] = scorer
    if deferrable:
        _DEFERRABLE.add(name)
    else:
        _DEFERRABLE.discard(name)


def step_scorer_unregister(name: str) -> None:
    _SCORERS.pop(name, None)
    _DEFERRABLE.discard(name)


def step_scores_deferred(*, campaign_id: int, solution_id: int) -> dict[str, list[float] | None]:
    """``step_scores`` without computing anything costly, in the same order: each scorer's
    scores as it keeps them, and None for a deferrable one that would have to compute (the page
    shows it as pending and fetches ``step_scores`` in a request of its own)."""
    out: dict[str, list[float] | None] = {}
    for name, scorer in list(_SCORERS.items()):
        try:
            if name in _DEFERRABLE:
                scores = scorer(campaign_id=campaign_id, solution_id=solution_id, cached_only=True)
            else:
                scores = scorer(campaign_id=campaign_id, solution_id=solution_id)
        except ScoresPending:
            out[name] = None
            continue
        except Exception:
            log.exception("step scorer %s failed on solution %s", name, solution_id)
            continue
        if scores is not None:
            out[name] = scores
    return out


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

"""The active PRM's per-step scores of one solution, for pages below this app (the data browser's
item page, ``labeling.curation.views``): registered with ``labeling.scores`` as "PRM".

Scoring one solution is cheap once the checkpoint is loaded; the loaded scorer is kept per process
(one per model version) and the answer is cached per (model, solution), so a page that shows the
scores pays for torch only the first time.
"""

from __future__ import annotations

import functools
from pathlib import Path

from django.conf import settings
from django.core.cache import cache

from labeling.models import Solution, Step
from labeling.scores import ScoresPending
from learning.models import PRMModel

CACHE_SECONDS = 3600


# The checkpoints this process has loaded (``_scorer``'s cache): scoring with one is cheap.
_LOADED: set[str] = set()


@functools.lru_cache(maxsize=2)
def _scorer(path: str):
    import prm

    full = Path(settings.MEDIA_ROOT) / path
    loaded = prm.load(full)
    _LOADED.add(str(full))
    return loaded


def active_prm_step_scores(
    *, campaign_id: int, solution_id: int, cached_only: bool = False
) -> list[float] | None:
    """The active model's P(correct) of each step, or None when the campaign has no model.

    ``cached_only``: never load the model (torch and a checkpoint: seconds on a process's first
    page); answer from the cache, or score at once when this process has the model loaded,
    else raise ``ScoresPending`` (the item page then fetches them in a request of its own)."""
    model = PRMModel.objects.filter(campaign_id=campaign_id, is_active=True).first()
    if model is None:
        return None
    key = f"prm-step-scores:{model.pk}:{solution_id}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    if cached_only and str(Path(settings.MEDIA_ROOT) / model.path) not in _LOADED:
        raise ScoresPending(model.path)
    solution = Solution.objects.select_related("problem").filter(pk=solution_id).first()
    if solution is None:
        return None
    steps = list(
        Step.objects.filter(solution=solution).order_by("index").values_list("text", flat=True)
    )
    scores = _scorer(model.path).score([(solution.problem.text, steps)])[0]
    scores = [round(float(s), 4) for s in scores]
    cache.set(key, scores, CACHE_SECONDS)
    return scores

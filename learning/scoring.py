"""The PRM's scores of a campaign's open solutions: read here, computed by ``prm.batch_scoring``.

This module reads what the PRM needs from the database (which open solutions there are, their
content hashes, the texts of those the feature cache lacks) and turns ``prm``'s records into the
``Scored`` items the strategies order; everything about features, their cache, the process pool
and the arithmetic of a solution's score is ``prm``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import groupby
from operator import itemgetter
from pathlib import Path

from django.conf import settings
from django.db.models import QuerySet

from labeling.models import Campaign, Problem, Solution, Step
from learning.ordering import Scored

BEAT_EVERY = 4096  # records between two heartbeats while scoring streams


def campaign_cache_dir(campaign: Campaign) -> Path:
    """Where a campaign's PRM feature caches live: the open solutions' scoring features
    (``features-<key>.npz``) and the training items (``train-cache/``, ``prm.item_cache``).

    Under this worker's ``MEDIA_ROOT``, not in the file storage: a cache is read and rewritten
    whole by the run that uses it, and it only ever speeds a run up (whatever it holds, the
    results are the ones without it), so a worker with a cold copy, on a machine of its own or
    with S3 storage, just featurises more. On a shared mount the workers share it; every write
    is a whole file renamed into place.
    """
    return Path(settings.MEDIA_ROOT) / "prm" / campaign.slug


def open_solutions(campaign: Campaign) -> QuerySet[Solution]:
    """The campaign's open regular solutions: what a run scores and orders."""
    return Solution.objects.filter(
        campaign=campaign, kind=Solution.Kind.REGULAR, is_open=True
    ).order_by()


def score_workers() -> int:
    """Processes to featurise and score with: ``STEPWISE_AL_SCORE_WORKERS`` (a daemonic process,
    a Celery prefork child, runs them in itself: ``prm.runtime.forked_map``)."""
    return max(1, settings.STEPWISE_AL_SCORE_WORKERS)


def open_scored(
    *,
    campaign: Campaign,
    scorer,
    beat: Callable[[], None],
    stats: dict | None = None,
    members: Sequence = (),
    stand_in: bool = False,
) -> list[Scored]:
    """Every open regular solution with its PRM score (product of step P(correct)), its
    uncertainty (mean step entropy) and, given ``members`` (``bow`` models on bootstrap
    resamples of the labels), their ``disagreement``; ``stats`` receives how many solutions were
    featurised and how many came from the feature cache.

    Without a ``scorer`` (no labels to train the campaign's own PRM on yet): with ``stand_in``
    the served PRM's stored scores stand in for it (``stats["served"]``: how many it scored),
    else the solutions carry no score, only what the strategies that need no PRM read."""
    rows = {
        pk: (correct, digest, verifier)
        for pk, correct, digest, verifier in open_solutions(campaign)
        .order_by("pk")
        .values_list("pk", "answer_is_correct", "content_hash", "verifier_score")
    }
    cache = campaign_cache_dir(campaign)
    if scorer is None:
        return _scored_by_stored(rows, stand_in=stand_in, campaign=campaign, stats=stats)
    from prm.batch_scoring import BatchScoring

    batch = BatchScoring(
        scorer,
        wanted=[(pk, digest) for pk, (_, digest, _) in rows.items()],
        cache=cache,
        members=members,
        workers=score_workers(),
    )
    texts = solution_texts(campaign=campaign, ids=batch.missing)
    scored = []
    for k, record in enumerate(batch.score(texts)):
        correct, _, verifier = rows[record.id]
        scored.append(
            Scored(
                record.id,
                record.score,
                correct,
                uncertainty=record.entropy,
                verifier_score=verifier,
                disagreement=record.spread,
            )
        )
        if k % BEAT_EVERY == BEAT_EVERY - 1:
            beat()
    beat()
    if stats is not None:
        stats.update(batch.counts)
    return scored


def _scored_by_stored(
    rows: dict[int, tuple[bool | None, str, float | None]],
    *,
    stand_in: bool,
    campaign: Campaign,
    stats: dict | None,
) -> list[Scored]:
    """The open solutions scored by the served PRM's stored step scores (``stand_in``): the
    product of them, their mean entropy (``prm.metrics``); one it has not scored scores 0 (it
    goes last of its kind) and has no uncertainty. Without ``stand_in``, no score at all."""
    from machines.served import served_scores
    from prm.metrics import solution_score, step_entropy

    stored: dict[int, list[float]] = {}
    if stand_in:
        stored = dict(served_scores(campaign=campaign).values_list("solution_id", "step_scores"))
    out = []
    for pk, (correct, _, verifier) in rows.items():
        steps = stored.get(pk)
        out.append(
            Scored(
                pk,
                solution_score(steps) if steps is not None else 0.0,
                correct,
                uncertainty=step_entropy(steps) if steps is not None else None,
                verifier_score=verifier,
            )
        )
    if stats is not None and stand_in:
        stats["served"] = sum(1 for pk in rows if pk in stored)
    return out


def solution_texts(*, campaign: Campaign, ids: set[int]) -> Iterator[tuple[int, str, list[str]]]:
    """``(id, problem, steps)`` of the open solutions in ``ids`` that have steps, streamed in id
    order."""
    if not ids:
        return
    problems = dict(Problem.objects.filter(campaign=campaign).values_list("pk", "text"))
    problem_of = dict(open_solutions(campaign).values_list("pk", "problem_id"))
    steps_q = Step.objects.filter(solution__in=open_solutions(campaign).values("pk"))
    if len(ids) <= 2000:  # a few new imports: read only theirs
        steps_q = Step.objects.filter(solution_id__in=sorted(ids))
    rows = (
        steps_q.order_by("solution_id", "index")
        .values_list("solution_id", "text")
        .iterator(chunk_size=10000)
    )
    for sid, group in groupby(rows, key=itemgetter(0)):
        if sid in ids:
            yield sid, problems[problem_of[sid]], [text for _, text in group]

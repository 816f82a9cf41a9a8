"""Scoring every open solution with a PRM: from the campaign's feature cache, or featurised afresh.

Featurising steps is pure Python and the bulk of a run's scoring time, so it is shared among
``STEPWISE_AL_SCORE_WORKERS`` forked processes when there is enough of it (``score_workers``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from django.conf import settings

from labeling.models import Campaign, Problem, Solution, Step
from learning.ordering import Scored

SCORE_BATCH = 4096  # solutions scored at a time, per scoring process


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


def _open_solutions(campaign: Campaign):
    return Solution.objects.filter(
        campaign=campaign, kind=Solution.Kind.REGULAR, is_open=True
    ).order_by()


def _score_open(
    *,
    campaign: Campaign,
    scorer,
    beat: Callable[[], None],
    stats: dict | None = None,
    members: Sequence = (),
) -> Iterator[Scored]:
    """Every open regular solution with its PRM score (product of step P(correct)).

    ``bow`` models read the campaign's feature cache (``prm.feature_cache``) and featurise
    only the solutions it lacks; other backbones featurise everything, in batches. ``stats``, when
    given, receives how many solutions were featurised and how many came from the cache.
    ``members`` (``bow`` models on bootstrap resamples of the labels) give each solution its
    ``disagreement``: the mean over its steps of the members' standard deviation of P(correct),
    from the same features (no other backbone has them: ``disagreement`` stays None).
    """
    from prm import feature_cache

    if not feature_cache.supports(scorer.backbone):
        yield from _score_open_plain(campaign=campaign, scorer=scorer, beat=beat)
        return
    rows = {
        pk: (correct, digest, verifier)
        for pk, correct, digest, verifier in _open_solutions(campaign)
        .order_by("pk")
        .values_list("pk", "answer_is_correct", "content_hash", "verifier_score")
    }
    path = campaign_cache_dir(campaign) / f"features-{feature_cache.cache_key(scorer.backbone)}.npz"
    features, counts = feature_cache.features_for(
        path=path,
        backbone=scorer.backbone,
        wanted=[(pk, digest) for pk, (_, digest, _) in rows.items()],
        texts=lambda ids: _solution_texts(campaign=campaign, ids=ids),
        build=lambda texts, n: _featurise(scorer.backbone, texts, n),
    )
    if stats is not None:
        stats.update(counts)
    beat()
    scores, uncertainty = _product_and_entropy(features, scorer)
    spread = _disagreement(features, members).tolist() if members else [None] * len(scores)
    for sid, score, unsure, spread_of in zip(
        features.ids.tolist(), scores.tolist(), uncertainty.tolist(), spread, strict=True
    ):
        correct, _, verifier = rows[sid]
        yield Scored(
            sid,
            score,
            correct,
            uncertainty=unsure,
            verifier_score=verifier,
            disagreement=spread_of,
        )


def _disagreement(features, members: Sequence):
    """Each solution's mean over its steps of the members' standard deviation of calibrated
    P(correct) (0 without steps): how much models trained on resamples of the same labels
    disagree about it (ActPRM's ensemble uncertainty)."""
    import numpy as np

    from prm.scoring import calibrate

    probs = np.stack(
        [calibrate(features.logits(m.backbone), m.calibration) for m in members], axis=0
    )
    spread = probs.std(axis=0)
    n = len(features.ids)
    out = np.zeros(n)
    counts = np.diff(features.starts)
    has = counts > 0
    if features.items:
        out[has] = np.add.reduceat(spread, features.starts[:-1][has]) / counts[has]
    return out


def _product_and_entropy(features, scorer):
    """Each solution's score (the product of its steps' calibrated P(correct), as
    ``Features.solution_scores``; 0 without steps) and its steps' mean entropy in bits (0 without
    steps), from one forward pass."""
    import numpy as np

    from prm.scoring import calibrate

    probs = calibrate(features.logits(scorer.backbone), scorer.calibration)
    p = np.clip(probs, 1e-12, 1 - 1e-12)
    entropy = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
    logp = np.log(np.maximum(probs, 1e-300))
    n = len(features.ids)
    sums, ents = np.zeros(n), np.zeros(n)
    counts = np.diff(features.starts)
    has = counts > 0
    if features.items:
        sums[has] = np.add.reduceat(logp, features.starts[:-1][has])
        ents[has] = np.add.reduceat(entropy, features.starts[:-1][has]) / counts[has]
    return np.where(has, np.exp(sums), 0.0), ents


def _solution_texts(*, campaign: Campaign, ids: set[int]) -> Iterator[tuple[int, str, list[str]]]:
    """``(id, problem, steps)`` of the open solutions in ``ids``, streamed in id order."""
    if not ids:
        return
    problems = dict(Problem.objects.filter(campaign=campaign).values_list("pk", "text"))
    problem_of = dict(_open_solutions(campaign).values_list("pk", "problem_id"))
    steps_q = Step.objects.filter(solution__in=_open_solutions(campaign).values("pk"))
    if len(ids) <= 2000:  # a few new imports: read only theirs
        steps_q = Step.objects.filter(solution_id__in=sorted(ids))
    current, steps = None, []
    for sid, text in (
        steps_q.order_by("solution_id", "index")
        .values_list("solution_id", "text")
        .iterator(chunk_size=10000)
    ):
        if sid != current:
            if current in ids:
                yield current, problems[problem_of[current]], steps
            current, steps = sid, []
        steps.append(text)
    if current in ids:
        yield current, problems[problem_of[current]], steps


def score_workers() -> int:
    """Processes to featurise and score with: ``STEPWISE_AL_SCORE_WORKERS``, but 1 inside a
    daemonic process (a Celery prefork child), which may not have children of its own."""
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return 1
    return max(1, settings.STEPWISE_AL_SCORE_WORKERS)


_FORKED = None  # the backbone, for forked featurising processes


def _featurise_chunk(rows: list):
    from prm.feature_cache import Features

    return Features.build(_FORKED, rows)


def _chunks(rows: Iterable, size: int) -> Iterator[list]:
    chunk: list = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _featurise(backbone, rows: Iterable, n: int):
    """Features of many solutions; pure Python, so ``STEPWISE_AL_SCORE_WORKERS`` forked processes
    share the work when there is enough of it. The processes start before the texts are read:
    each chunk goes to them as soon as this thread has read it (the database is read here, where
    the connection is), so reading overlaps featurising instead of coming before it; only arrays
    come back, in the chunks' order."""
    import multiprocessing

    from prm.feature_cache import Features

    global _FORKED
    workers = score_workers()
    if workers == 1 or n < 2 * SCORE_BATCH:
        return Features.build(backbone, rows)  # streaming: the texts are never all in memory
    if getattr(backbone, "checks", False):
        from prm.latex import load_parser

        load_parser()  # imported and warmed once here, not once in every forked process
    from prm.runtime import featurising_gc

    size = -(-n // (workers * 4))
    _FORKED = backbone
    try:
        # the collector is off here too while the rows are read and sent (no cycles either);
        # the featurising processes, forked inside, inherit it off
        with featurising_gc(), multiprocessing.get_context("fork").Pool(workers) as pool:
            pending = [pool.apply_async(_featurise_chunk, (c,)) for c in _chunks(rows, size)]
            parts = [result.get() for result in pending]
    finally:
        _FORKED = None
    return Features.concat(parts)


def _score_open_plain(*, campaign: Campaign, scorer, beat: Callable[[], None]) -> Iterator[Scored]:
    """Every open regular solution with its PRM score, featurised afresh, in batches.

    Steps stream in (solution, index) order from one query; a solution with no step scores 0 so
    it goes last of its kind. Featurising steps is pure Python and the bulk of the time, so with
    ``STEPWISE_AL_SCORE_WORKERS`` above 1 each batch is scored by that many forked processes.
    """
    from learning.strategies import step_entropy
    from prm.metrics import aggregate

    workers = score_workers()
    batch_size = SCORE_BATCH * workers
    rows = {
        pk: (problem_id, correct, verifier)
        for pk, problem_id, correct, verifier in _open_solutions(campaign).values_list(
            "pk", "problem_id", "answer_is_correct", "verifier_score"
        )
    }
    problems = dict(Problem.objects.filter(campaign=campaign).values_list("pk", "text"))
    steps_q = (
        Step.objects.filter(solution__in=_open_solutions(campaign).values("pk"))
        .order_by("solution_id", "index")
        .values_list("solution_id", "text")
    )
    batch_ids: list[int] = []
    batch: list[tuple[str, list[str]]] = []
    seen: set[int] = set()

    def add(sid: int, steps: list[str]) -> None:
        batch_ids.append(sid)
        batch.append((problems[rows[sid][0]], steps))
        seen.add(sid)

    def flush() -> Iterator[Scored]:
        probs = scorer.score(batch, workers=workers)
        for sid, p in zip(batch_ids, probs, strict=True):
            _, correct, verifier = rows[sid]
            yield Scored(
                sid,
                aggregate(p, "product"),
                correct,
                uncertainty=step_entropy(p),
                verifier_score=verifier,
            )
        batch_ids.clear()
        batch.clear()
        beat()

    current, steps = None, []
    for sid, text in steps_q.iterator(chunk_size=10000):
        if sid != current:
            if current is not None:
                add(current, steps)
                if len(batch) >= batch_size:
                    yield from flush()
            current, steps = sid, []
        steps.append(text)
    if current is not None:
        add(current, steps)
    if batch:
        yield from flush()
    for sid, (_, correct, verifier) in rows.items():
        if sid not in seen:
            yield Scored(sid, 0.0, correct, uncertainty=0.0, verifier_score=verifier)

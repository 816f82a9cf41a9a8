"""Scoring a batch of solutions with one PRM: a record per solution, streamed.

The one API the app scores many solutions with (an active-learning run's open solutions, a
campaign's evidence): the caller says which solutions it wants (``(id, content_hash)``), asks
which of them it must send (``missing``: those the feature cache lacks; all of them without a
cache), streams their texts to ``score`` and gets, for every wanted solution, its
:class:`SolutionScore`. Everything between is here: the ``bow`` feature cache
(``prm.feature_cache``), featurising in the one process pool (``prm.runtime.forked_map``), the
forward pass, calibration and the solution-level arithmetic (``prm.metrics``: the product of the
steps' P(correct), their mean entropy, an ensemble's spread). Nothing calls back into the caller.

::

    batch = BatchScoring(scorer, wanted=[(id, content_hash), ...], cache=path, workers=2)
    records = list(batch.score(texts_of(batch.missing)))   # texts: (id, problem, steps)
    batch.counts                                           # {"cached": ..., "featurised": ...}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from prm.backbones.base import Walking
from prm.feature_cache import CachedFeatures, Features, cache_key, supports
from prm.metrics import solution_scores, solution_spread
from prm.runtime import forked_map
from prm.scoring import Scorer, calibrate

SCORE_BATCH = 4096  # solutions featurised at a time, per process
CHUNKS_PER_WORKER = 4  # a cold run's solutions are cut into this many chunks per process

Text = tuple[int, str, Sequence[str]]  # (id, problem, steps)


class SolutionScore(NamedTuple):
    """What a PRM says of one solution (a tuple: a hundred thousand of them are made at once)."""

    id: int
    score: float  # the product of its steps' calibrated P(correct); 0 without steps
    entropy: float  # the mean binary entropy (bits) of its steps' P(correct); 0 without steps
    spread: float | None = None  # the ensemble members' disagreement; None without members


class BatchScoring:
    """The scores of the ``wanted`` solutions with ``scorer``.

    ``cache``: the folder that keeps the ``bow`` features of scored solutions between calls
    (``features-<key>.npz``; other backbones keep none). ``members``: ``bow`` models on bootstrap
    resamples of the labels, whose disagreement each record gets as ``spread`` (from the same
    features; other backbones have none). ``workers``: featurising processes.
    """

    def __init__(
        self,
        scorer: Scorer,
        *,
        wanted: Sequence[tuple[int, str]],
        cache: Path | None = None,
        members: Sequence[Scorer] = (),
        workers: int = 1,
    ) -> None:
        self.scorer = scorer
        self.wanted = list(wanted)
        self.members = list(members)
        self.workers = max(1, workers)
        self.counts = {"cached": 0, "featurised": 0}
        self._cached: CachedFeatures | None = None
        if supports(scorer.backbone):
            path = cache / f"features-{cache_key(scorer.backbone)}.npz" if cache else None
            self._cached = CachedFeatures(path, self.wanted)
            self.missing = set(self._cached.missing)
        else:
            self.missing = {sid for sid, _ in self.wanted}

    def score(self, texts: Iterable[Text]) -> Iterator[SolutionScore]:
        """A record for every wanted solution, given the texts of the ``missing`` ones (a
        solution not among them has no step). Streams: the texts are never all in memory."""
        if self._cached is not None:
            yield from self._score_features(texts)
        else:
            yield from self._score_items(texts)

    # -- bow: features, kept between calls ----------------------------------------------------

    def _score_features(self, texts: Iterable[Text]) -> Iterator[SolutionScore]:
        assert self._cached is not None
        missing = self._cached.missing
        rows = ((sid, missing[sid], problem, steps) for sid, problem, steps in texts)
        backbone = self.scorer.backbone
        assert isinstance(backbone, Walking)  # ``supports`` said so
        fresh = _featurise(backbone, rows, len(missing), workers=self.workers)
        features = self._cached.complete(fresh)
        self.counts = {
            "cached": len(self.wanted) - len(missing),
            "featurised": len(fresh.ids),
        }
        probs = calibrate(features.logits(self.scorer.backbone), self.scorer.calibration)
        scores, entropies = solution_scores(probs, features.starts)
        spreads: list[float | None] = [None] * len(scores)
        if self.members:
            member_probs = np.stack(
                [calibrate(features.logits(m.backbone), m.calibration) for m in self.members]
            )
            spreads = solution_spread(member_probs, features.starts).tolist()
        for sid, score, entropy, spread in zip(
            features.ids.tolist(), scores.tolist(), entropies.tolist(), spreads, strict=True
        ):
            yield SolutionScore(sid, score, entropy, spread)

    # -- other backbones: items, in batches ---------------------------------------------------

    def _score_items(self, texts: Iterable[Text]) -> Iterator[SolutionScore]:
        size = SCORE_BATCH * self.workers
        seen: set[int] = set()
        batch: list[Text] = []
        for text in texts:
            batch.append(text)
            seen.add(text[0])
            if len(batch) >= size:
                yield from self._score_batch(batch)
                batch = []
        if batch:
            yield from self._score_batch(batch)
        self.counts = {"cached": 0, "featurised": len(seen)}
        for sid, _ in self.wanted:
            if sid not in seen:
                yield SolutionScore(sid, 0.0, 0.0)

    def _score_batch(self, batch: list[Text]) -> Iterator[SolutionScore]:
        logits = self.scorer.logits([(p, s) for _, p, s in batch], workers=self.workers)
        sizes = np.fromiter((len(z) for z in logits), dtype=np.int64, count=len(logits))
        starts = np.zeros(len(logits) + 1, np.int64)
        np.cumsum(sizes, out=starts[1:])
        flat = np.concatenate(logits) if len(logits) else np.zeros(0)
        scores, entropies = solution_scores(calibrate(flat, self.scorer.calibration), starts)
        for (sid, _, _), score, entropy in zip(
            batch, scores.tolist(), entropies.tolist(), strict=True
        ):
            yield SolutionScore(sid, score, entropy)


Row = tuple[int, str, str, Sequence[str]]  # (id, content_hash, problem, steps)


def _featurise_chunk(backbone: Walking, rows: list[Row]) -> Features:
    return Features.build(backbone, rows)


def _chunks(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    chunk: list[Row] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _featurise(backbone: Walking, rows: Iterable[Row], n: int, *, workers: int) -> Features:
    """Features of ``n`` solutions at most. With enough of them, ``workers`` forked processes
    share the work, each chunk sent as soon as it has been read, so reading (the caller's
    database) overlaps featurising; otherwise here, streaming."""
    if workers == 1 or n < 2 * SCORE_BATCH:
        return Features.build(backbone, rows)
    backbone.walker("")  # warm the checks' parser once, before forking (each child has it)
    size = -(-n // (workers * CHUNKS_PER_WORKER))
    parts = forked_map(_featurise_chunk, backbone, _chunks(rows, size), workers=workers)
    return Features.concat(parts)

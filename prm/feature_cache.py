"""The ``bow`` PRM's step features of a campaign's open solutions, kept on disk between runs.

Rescoring is mostly featurising: tokens, hashed n-grams and the structural tokens of every step
are pure Python (about 85% of the time to score a solution), while the network itself is a few
embedding-bag lookups. The features depend on the text and on the backbone's featurisation
settings, not on the trained weights, and a solution's steps never change after import. So each
active-learning run keeps them in one file per campaign and featurisation settings
(``MEDIA_ROOT/prm/<campaign>/features-<key>.npz``) and featurises only the solutions it has not
seen (new imports); a solution is recognised by its id *and* ``content_hash``.

The file holds, for the solutions in order: their ids and content hashes, where each solution's
steps start, and per feature (``words``, ``struct``, ...) the flat int32 ids with each step's
offset: exactly what ``nn.EmbeddingBag`` takes, so scoring needs no Python per step.

Training keeps the labelled steps' features the same way, by content rather than by solution id
(``prm.item_cache``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ITEMS_PER_BATCH = 65536  # steps per forward pass
FLUSH_ITEMS = 20000  # steps featurised between conversions to arrays


def cache_key(backbone) -> str:
    """What the features depend on: the backbone's description (a changed setting, a new key)."""
    blob = json.dumps(backbone.describe(), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def supports(backbone) -> bool:
    """Only ``bow``: its items are one step each with a few bags of integer ids."""
    return getattr(backbone, "name", None) == "bow"


class Features:
    """The features of some solutions as flat arrays (see the module docstring)."""

    def __init__(
        self,
        ids: np.ndarray,
        hashes: np.ndarray,
        starts: np.ndarray,
        bags: dict[str, tuple[np.ndarray, np.ndarray]],
    ) -> None:
        self.ids, self.hashes, self.starts, self.bags = ids, hashes, starts, bags
        self.index = {int(i): k for k, i in enumerate(ids)}

    @property
    def items(self) -> int:
        return int(self.starts[-1])

    @classmethod
    def empty(cls) -> Features:
        return cls(np.zeros(0, np.int64), np.zeros(0, "U64"), np.zeros(1, np.int64), {})

    @classmethod
    def build(cls, backbone, solutions: Iterable[tuple[int, str, str, Sequence[str]]]) -> Features:
        """Featurise ``(id, content_hash, problem, steps)`` solutions with the backbone.

        Ids go into int32 arrays every ``FLUSH_ITEMS`` steps: as Python lists of ints a million
        steps would take over a gigabyte. Garbage is collected less often meanwhile
        (``prm.runtime.featurising_gc``).
        """
        from prm.runtime import featurising_gc  # here: importing it imports torch

        with featurising_gc():
            return cls._build(backbone, solutions)

    @classmethod
    def _build(cls, backbone, solutions: Iterable[tuple[int, str, str, Sequence[str]]]) -> Features:
        ids, hashes, starts = [], [], [0]
        flat: dict[str, list[int]] = {}
        lengths: dict[str, list[int]] = {}
        done_flat: dict[str, list[np.ndarray]] = {}
        done_lengths: dict[str, list[np.ndarray]] = {}
        pending = 0

        def flush() -> None:
            for name in flat:
                done_flat.setdefault(name, []).append(np.asarray(flat[name], dtype=np.int32))
                done_lengths.setdefault(name, []).append(np.asarray(lengths[name], dtype=np.int64))
                flat[name], lengths[name] = [], []

        for sid, digest, problem, steps in solutions:
            # the walker's features of each step in turn: what ``prepare`` would put in its
            # items, without the items (the cache needs neither their keys nor their indices)
            walker = backbone.walker(problem)
            for step in steps:
                for name, values in walker.step(step).items():
                    flat.setdefault(name, []).extend(values)
                    lengths.setdefault(name, []).append(len(values))
            ids.append(sid)
            hashes.append(digest)
            starts.append(starts[-1] + len(steps))
            pending += len(steps)
            if pending >= FLUSH_ITEMS:
                flush()
                pending = 0
        flush()
        bags = {
            name: (
                np.concatenate(done_flat[name]),
                np.concatenate([[0], np.cumsum(np.concatenate(done_lengths[name]))]),
            )
            for name in done_flat
        }
        return cls(
            np.asarray(ids, dtype=np.int64),
            np.asarray(hashes, dtype="U64"),
            np.asarray(starts, dtype=np.int64),
            bags,
        )

    def select(self, wanted: Sequence[int]) -> Features:
        """The features of the solutions at positions ``wanted``, in that order.

        Copied by runs of consecutive positions (slices), so the only memory used is the result's:
        index arrays as long as the flat ids would take several times as much.
        """
        wanted = np.asarray(wanted, dtype=np.int64)
        if not len(wanted):
            return Features.empty()
        if len(wanted) == len(self.ids) and (wanted == np.arange(len(wanted))).all():
            return self
        breaks = np.flatnonzero(np.diff(wanted) != 1) + 1
        first = wanted[np.concatenate([[0], breaks])]
        last = wanted[np.concatenate([breaks, [len(wanted)]]) - 1]
        item_lo, item_hi = self.starts[first], self.starts[last + 1]
        bags = {}
        for name, (flat, off) in self.bags.items():
            pieces = [flat[off[lo] : off[hi]] for lo, hi in zip(item_lo, item_hi, strict=True)]
            sizes = [np.diff(off[lo : hi + 1]) for lo, hi in zip(item_lo, item_hi, strict=True)]
            bags[name] = (
                np.concatenate(pieces) if pieces else np.zeros(0, np.int32),
                np.concatenate([[0], np.cumsum(np.concatenate(sizes))]).astype(np.int64),
            )
        starts = np.concatenate([[0], np.cumsum(np.diff(self.starts)[wanted])]).astype(np.int64)
        return Features(self.ids[wanted], self.hashes[wanted], starts, bags)

    @staticmethod
    def concat(parts: Sequence[Features]) -> Features:
        parts = [p for p in parts if len(p.ids)]
        if not parts:
            return Features.empty()
        if len(parts) == 1:
            return parts[0]
        names = set().union(*(p.bags.keys() for p in parts))
        none = (np.zeros(0, np.int32), np.zeros(1, np.int64))
        starts = [np.zeros(1, np.int64)]
        base = 0
        for p in parts:
            starts.append(p.starts[1:] + base)
            base += p.items
        bags = {}
        for name in names:
            flats, offs, shift = [], [np.zeros(1, np.int64)], 0
            for p in parts:
                flat, off = p.bags.get(name, none)
                flats.append(flat)
                offs.append(off[1:] + shift)
                shift += int(off[-1])
            bags[name] = (np.concatenate(flats), np.concatenate(offs))
        return Features(
            np.concatenate([p.ids for p in parts]),
            np.concatenate([p.hashes for p in parts]),
            np.concatenate(starts),
            bags,
        )

    # -- on disk ----------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write atomically: a reader sees the old file or the new one, never half of one."""
        arrays = {"ids": self.ids, "hashes": self.hashes, "starts": self.starts}
        for name, (flat, off) in self.bags.items():
            arrays[f"bag_{name}_ids"] = flat
            arrays[f"bag_{name}_offsets"] = off
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Features:
        if not path.is_file():
            return cls.empty()
        try:
            with np.load(path) as data:
                names = {k[4:-4] for k in data.files if k.startswith("bag_") and k.endswith("_ids")}
                bags = {n: (data[f"bag_{n}_ids"], data[f"bag_{n}_offsets"]) for n in names}
                return cls(data["ids"], data["hashes"], data["starts"], bags)
        except (OSError, ValueError, KeyError):  # unreadable: start afresh, it is only a cache
            return cls.empty()

    # -- scoring ----------------------------------------------------------------------------

    def logits(self, backbone) -> np.ndarray:
        """Every step's logit, in order, by ``ITEMS_PER_BATCH`` steps a forward pass."""
        import torch

        out = np.empty(self.items, dtype=np.float64)
        backbone.eval()
        with torch.inference_mode():
            for a in range(0, self.items, ITEMS_PER_BATCH):
                b = min(a + ITEMS_PER_BATCH, self.items)
                batch = {}
                for name, (flat, off) in self.bags.items():
                    batch[name] = torch.from_numpy(flat[off[a] : off[b]].astype(np.int64))
                    batch[name + "_offsets"] = torch.from_numpy(off[a:b] - off[a])
                out[a:b] = backbone(batch).float().numpy()
        return out

    def solution_scores(self, scorer) -> np.ndarray:
        """Each solution's score: the product of its steps' calibrated P(correct) (as
        ``Scorer.solution_scores``); a solution with no step scores 0."""
        from prm.scoring import calibrate

        probs = calibrate(self.logits(scorer.backbone), scorer.calibration)
        logp = np.log(np.maximum(probs, 1e-300))
        sums = np.zeros(len(self.ids))
        counts = np.diff(self.starts)
        has = counts > 0
        if self.items:
            sums[has] = np.add.reduceat(logp, self.starts[:-1][has])
        return np.where(has, np.exp(sums), 0.0)


def features_for(
    *,
    path: Path,
    backbone,
    wanted: Sequence[tuple[int, str]],
    texts: Callable[[set[int]], Iterable[tuple[int, str, Sequence[str]]]],
    build: Callable[[Iterable[tuple[int, str, str, Sequence[str]]], int], Features] | None = None,
) -> tuple[Features, dict[str, Any]]:
    """The features of the ``(id, content_hash)`` solutions, from the cache where it has them.

    ``texts(ids)`` yields ``(id, problem, steps)`` of the solutions to featurise; ``build(rows,
    n)`` featurises them as they stream in (``n``: how many at most; default: in this process).
    The cache file is rewritten to hold exactly ``wanted`` (so closed solutions drop out).
    Returns the features and counts.
    """
    cached = Features.load(path)
    keep_pos, from_cache = [], []
    missing: dict[int, str] = {}
    for sid, digest in wanted:
        k = cached.index.get(sid)
        if k is not None and cached.hashes[k] == digest:
            keep_pos.append(k)
            from_cache.append(sid)
        else:
            missing[sid] = digest
    reused = cached.select(keep_pos)
    rows = ((sid, missing[sid], problem, steps) for sid, problem, steps in texts(set(missing)))
    fresh = (build or (lambda r, n: Features.build(backbone, r)))(rows, len(missing))
    featured = {int(i) for i in reused.ids} | {int(i) for i in fresh.ids}
    # Solutions without any step (none in ``texts``) get an empty entry so the order is complete.
    empty = [(sid, missing[sid], "", []) for sid in missing if sid not in featured]
    merged = Features.concat([reused, fresh, Features.build(backbone, empty)])
    position = merged.index
    ordered = merged.select([position[sid] for sid, _ in wanted])
    ordered.save(path)
    return ordered, {"cached": len(from_cache), "featurised": len(fresh.ids)}

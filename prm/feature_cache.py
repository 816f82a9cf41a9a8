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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from prm.bags import Bags, BagWriter, bag_logits, concat_bags

if TYPE_CHECKING:
    from prm.backbones.base import Backbone, Walking

ITEMS_PER_BATCH = 65536  # steps per forward pass


def cache_key(backbone: Backbone) -> str:
    """What the features depend on: the backbone's description (a changed setting, a new key)."""
    blob = json.dumps(backbone.describe(), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def supports(backbone: Backbone | None) -> bool:
    """Only ``bow``: its items are one step each with a few bags of integer ids."""
    return getattr(backbone, "name", None) == "bow"


class Features:
    """The features of some solutions as flat arrays (see the module docstring)."""

    def __init__(
        self,
        ids: np.ndarray,
        hashes: np.ndarray,
        starts: np.ndarray,
        bags: Bags,
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
    def build(
        cls, backbone: Walking, solutions: Iterable[tuple[int, str, str, Sequence[str]]]
    ) -> Features:
        """Featurise ``(id, content_hash, problem, steps)`` solutions with the backbone, the
        collector off meanwhile (``prm.runtime.featurising_gc``)."""
        from prm.runtime import featurising_gc  # here: importing it imports torch

        ids: list[int] = []
        hashes: list[str] = []
        starts = [0]
        bags = BagWriter()
        with featurising_gc():
            for sid, digest, problem, steps in solutions:
                # the walker's features of each step in turn: what ``prepare`` would put in its
                # items, without the items (the cache needs neither their keys nor their indices)
                walker = backbone.walker(problem)
                for step in steps:
                    bags.add(walker.step(step))
                ids.append(sid)
                hashes.append(digest)
                starts.append(starts[-1] + len(steps))
        return cls(
            np.asarray(ids, dtype=np.int64),
            np.asarray(hashes, dtype="U64"),
            np.asarray(starts, dtype=np.int64),
            bags.bags(),
        )

    def select(self, positions: Sequence[int]) -> Features:
        """The features of the solutions at ``positions``, in that order.

        Copied by runs of consecutive positions (slices), so the only memory used is the result's:
        index arrays as long as the flat ids would take several times as much.
        """
        wanted = np.asarray(positions, dtype=np.int64)
        if not len(wanted):
            return Features.empty()
        if len(wanted) == len(self.ids) and bool(np.all(wanted == np.arange(len(wanted)))):
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
        starts = [np.zeros(1, np.int64)]
        base = 0
        for p in parts:
            starts.append(p.starts[1:] + base)
            base += p.items
        return Features(
            np.concatenate([p.ids for p in parts]),
            np.concatenate([p.hashes for p in parts]),
            np.concatenate(starts),
            concat_bags([p.bags for p in parts]),
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
            np.savez(f, allow_pickle=False, **arrays)
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

    def logits(self, backbone: Backbone) -> np.ndarray:
        """Every step's logit, in order, by ``ITEMS_PER_BATCH`` steps a forward pass."""
        return bag_logits(backbone, self.bags, self.items, batch_size=ITEMS_PER_BATCH)


class CachedFeatures:
    """The features of some ``(id, content_hash)`` solutions, from the cache file where it has
    them: ``missing`` says which the caller must featurise (a solution is known by its id *and*
    its content hash), ``complete`` takes them and rewrites the file to hold exactly the wanted
    solutions (so closed ones drop out). Without a file every solution is featurised."""

    def __init__(self, path: Path | None, wanted: Sequence[tuple[int, str]]) -> None:
        self.path = path
        self.wanted = list(wanted)
        cached = Features.load(path) if path is not None else Features.empty()
        keep: list[int] = []
        self.missing: dict[int, str] = {}
        for sid, digest in self.wanted:
            k = cached.index.get(sid)
            if k is not None and cached.hashes[k] == digest:
                keep.append(k)
            else:
                self.missing[sid] = digest
        self.reused = cached.select(keep)

    def complete(self, fresh: Features) -> Features:
        """The wanted solutions' features in the wanted order, ``fresh`` (those featurised now)
        joined to the reused ones; saved. A missing solution that ``fresh`` lacks has no step:
        it gets an empty entry so the order is complete."""
        featured = {int(i) for i in self.reused.ids} | {int(i) for i in fresh.ids}
        empty = [sid for sid in self.missing if sid not in featured]
        stepless = Features(
            np.asarray(empty, dtype=np.int64),
            np.asarray([self.missing[sid] for sid in empty], dtype="U64"),
            np.zeros(len(empty) + 1, np.int64),
            {},
        )
        merged = Features.concat([self.reused, fresh, stepless])
        position = merged.index
        ordered = merged.select([position[sid] for sid, _ in self.wanted])
        if self.path is not None:
            ordered.save(self.path)
        return ordered

"""What a training run trains on: the distinct labelled items of its rows, ready to batch.

Two shapes behind one interface (``len``, ``batch``, ``targets``, ``logits``,
``calibration_points``):

- :class:`PackedSet` for backbones with a ``walker`` (``bow``): flat arrays
  (``prm.items.PackedItems``), featurised as a tree, from the on-disk cache
  (``prm.item_cache``) where it has them, in forked processes where there is much to do;
- :class:`ListedSet` for the others (``minilm``, ``hf``): the backbone's ``Item`` s and its
  ``collate``, as before (their ``prepare_training`` caches the frozen layers' outputs).

Either way the items are the rows' distinct steps in first-seen order with the label of their
first row, so the same rows give the same items, the same batches and, for a seed, the same model,
whether their features came from the cache or not.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import torch

from prm.backbones import Backbone, BowBackbone, Item
from prm.bags import Bags
from prm.data import Solution, unique_steps
from prm.item_cache import Found, ItemCache
from prm.items import PackedItems, RowIndex, copy_items, featurise, gather
from prm.runtime import featurising_gc
from prm.scoring import batch_size_for, item_logits, solution_logits

# A backbone's ``prepare`` (or a memoised one): a solution's items.
Prepare = Callable[[str, Sequence[str]], list[Item]]
# (logit, label) of each distinct step once, and the rows' per-step logits.
CalibrationPoints = tuple[np.ndarray, np.ndarray, list[np.ndarray]]


class PackedSet:
    """Items ``[lo, hi)`` of a :class:`PackedItems` holding every part's items, and their rows
    (rows ``row_span`` of the ``RowIndex``)."""

    def __init__(
        self,
        packed: PackedItems,
        index: RowIndex,
        items: tuple[int, int],
        rows: Sequence[Solution],
        row_span: tuple[int, int],
    ) -> None:
        self.index, self.rows, self.row_span = index, rows, row_span
        self.lo, self.hi = items
        self.packed, self.full = _slice(packed, self.lo, self.hi), packed
        self.labels = self.packed.training_labels

    def __len__(self) -> int:
        return self.hi - self.lo

    def batch(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        return self.packed.batch(np.asarray(idx, dtype=np.int64))

    def targets(self, idx: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(self.labels[np.asarray(idx)].astype(np.float32))

    def logits(self, backbone: Backbone, *, device: torch.device) -> np.ndarray:
        return self.packed.logits(backbone, device=device)

    def calibration_points(self, backbone: Backbone, *, device: torch.device) -> CalibrationPoints:
        """(logit, label) of each distinct step once, and the rows' per-step logits: what
        ``unique_steps`` of the rows would give, straight from the items."""
        z = self.logits(backbone, device=device)
        return z, self.labels, self._per_row(z)

    def _per_row(self, z: np.ndarray) -> list[np.ndarray]:
        full = np.empty(len(self.full), dtype=np.float64)
        full[self.lo : self.hi] = z
        starts = self.index.row_starts
        first, last = self.row_span
        flat = full[self.index.row_items[starts[first] : starts[last]]]
        return np.split(flat, starts[first + 1 : last] - starts[first])


def _slice(packed: PackedItems, lo: int, hi: int) -> PackedItems:
    bags: Bags = {}
    for name, (flat, off) in packed.bags.items():
        bags[name] = (flat[off[lo] : off[hi]], off[lo : hi + 1] - off[lo])
    return PackedItems(packed.keys[lo:hi], bags, packed.training_labels[lo:hi])


class ListedSet:
    """The backbone's own items (``prepare``), batched by its ``collate``."""

    def __init__(self, backbone: Backbone, items: list[Item], rows: Sequence[Solution]) -> None:
        self.backbone, self.items, self.rows = backbone, items, rows
        self.labels = np.array([y for it in items for y in it.training_labels], dtype=bool)

    def __len__(self) -> int:
        return len(self.items)

    def batch(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        return self.backbone.collate([self.items[j] for j in idx])

    def targets(self, idx: np.ndarray) -> torch.Tensor:
        return torch.tensor([y for j in idx for y in self.items[j].labels], dtype=torch.float32)

    def logits(self, backbone: Backbone, *, device: torch.device) -> np.ndarray:
        z, _ = item_logits(backbone, self.items, device=device, batch_size=batch_size_for(backbone))
        return z

    def calibration_points(self, backbone: Backbone, *, device: torch.device) -> CalibrationPoints:
        # Through the same path as scoring (the full model, not the training cache of the frozen
        # layers), so calibration and thresholds match what ``load`` will give.
        row_logits = solution_logits(backbone, self.rows, device=device)
        z, y, _ = unique_steps(self.rows, row_logits)
        return z, y, row_logits


# What a training run trains and validates on: either shape.
TrainingSet = PackedSet | ListedSet


def listed_sets(backbone: Backbone, parts: Sequence[Sequence[Solution]]) -> list[ListedSet]:
    """One :class:`ListedSet` per part of the rows; an item repeated across rows counts once."""
    out = []
    for rows in parts:
        seen: set[Hashable] = set()
        items = []
        with featurising_gc():
            for s in rows:
                for it in backbone.prepare(s.problem, s.steps):
                    if it.key in seen:
                        continue
                    seen.add(it.key)
                    assert s.labels is not None, "listed_sets reads labelled rows"
                    # a copy: a memoised ``prepare`` (``prepare_cache``) hands out shared items
                    labels = tuple(s.labels[i] for i in it.steps)
                    items.append(dataclasses.replace(it, labels=labels))
        out.append(ListedSet(backbone, items, rows))
    return out


def packed_sets(
    backbone: BowBackbone,
    parts: Sequence[Sequence[Solution]],
    *,
    cache: ItemCache | None = None,
    workers: int = 1,
    prepare: Prepare | None = None,
    compact: bool = True,
) -> tuple[list[PackedSet], dict[str, Any]]:
    """One :class:`PackedSet` per part of the rows (train, validation), and what it cost.

    The parts' problems are disjoint (they are splits by problem), so no item is in two parts.
    ``cache`` is a ``prm.item_cache.ItemCache`` or None; ``prepare`` (a memoised
    ``backbone.prepare``, for ``prepare_cache``) featurises row by row instead of as a tree.
    ``compact``: whether these rows are what the cache should be cut down to when it has grown
    past its bounds (training's rows; not an evaluation's, which only adds what it featurised).
    """
    started = time.perf_counter()
    rows = [s for part in parts for s in part]
    index = RowIndex.build(rows)
    n = len(index)
    stats: dict[str, Any] = {"items": n, "labels": int(index.row_starts[-1])}
    found_mask = np.zeros(n, dtype=bool)
    found: list[Found] = []
    if cache is not None:
        found_mask, found = cache.lookup(index.keys)
    stats["keys_seconds"] = round(time.perf_counter() - started, 2)

    t = time.perf_counter()
    with featurising_gc():
        fresh_items, fresh_bags = _featurise(backbone, rows, index, ~found_mask, workers, prepare)
    stats["featurised"] = len(fresh_items)
    stats["from_cache"] = int(found_mask.sum())
    stats["featurise_seconds"] = round(time.perf_counter() - t, 2)

    t = time.perf_counter()
    names = list(fresh_bags) or (list(found[0].lengths) if found else [])
    bags: Bags = {}
    for name in names:
        lengths = np.zeros(n, dtype=np.int64)
        for f in found:
            lengths[f.items] = f.lengths[name]
        if len(fresh_items):
            lengths[fresh_items] = np.diff(fresh_bags[name][1])
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=off[1:])
        bags[name] = (np.empty(int(off[-1]), dtype=np.int32), off)
    for name, bag in bags.items():
        if len(fresh_items):
            src = fresh_bags[name]
            copy_items(bag, fresh_items, src, np.arange(len(fresh_items), dtype=np.int64))
    del fresh_bags
    if cache is not None and found:  # found: only with a cache
        copied = cache.fill(bags, found)
        lost = found_mask & ~copied  # a shard compacted away since lookup: featurise those
        if lost.any():
            with featurising_gc():
                again, again_bags = _featurise(backbone, rows, index, lost, workers, prepare)
            for name, bag in bags.items():
                src = again_bags[name]
                copy_items(bag, again, src, np.arange(len(again), dtype=np.int64))
            fresh_items = np.sort(np.concatenate([fresh_items, again]))
            stats["featurised"] += len(again)
            stats["from_cache"] -= len(again)
    packed = PackedItems(index.keys, bags, index.labels)
    if cache is not None:
        if compact and cache.needs_compaction(n, len(fresh_items)):
            stats["cache_compacted_shards"] = cache.compact(index.keys, bags)
        elif len(fresh_items):
            fresh = {name: gather(bag, fresh_items) for name, bag in bags.items()}
            cache.add(index.keys[fresh_items], fresh)
    stats["assemble_seconds"] = round(time.perf_counter() - t, 2)

    sets, item_lo, row_lo = [], 0, 0
    for part in parts:
        row_hi = row_lo + len(part)
        starts = index.row_starts
        items = index.row_items[starts[row_lo] : starts[row_hi]]
        item_hi = int(items.max()) + 1 if len(items) else item_lo
        if len(items) and int(items.min()) < item_lo:
            raise ValueError("training parts share a problem")  # splits are by problem
        sets.append(PackedSet(packed, index, (item_lo, item_hi), part, (row_lo, row_hi)))
        item_lo, row_lo = item_hi, row_hi
    return sets, stats


def _featurise(
    backbone: BowBackbone,
    rows: Sequence[Solution],
    index: RowIndex,
    missing: np.ndarray,
    workers: int,
    prepare: Prepare | None,
) -> tuple[np.ndarray, Bags]:
    if prepare is None:
        return featurise(backbone, rows, index, missing, workers=workers)
    # Row by row through the caller's memo: the items of each item's first row.
    wanted = np.flatnonzero(missing)
    _, first = np.unique(index.row_items, return_index=True)  # items are 0..n-1, all present
    flat: dict[str, list[int]] = {}
    lengths: dict[str, list[int]] = {}
    row_of = np.searchsorted(index.row_starts, first[wanted], side="right") - 1
    prepared: dict[int, list[Item]] = {}
    for item, r in zip(wanted.tolist(), row_of.tolist(), strict=True):
        if r not in prepared:
            prepared = {r: prepare(rows[r].problem, rows[r].steps)}
        it = prepared[r][int(first[item] - index.row_starts[r])]
        for name, ids in it.features.items():
            flat.setdefault(name, []).extend(ids)
            lengths.setdefault(name, []).append(len(ids))
    bags: Bags = {}
    for name in flat:
        off = np.zeros(len(wanted) + 1, np.int64)
        np.cumsum(np.asarray(lengths[name], dtype=np.int64), out=off[1:])
        bags[name] = (np.asarray(flat[name], dtype=np.int32), off)
    return wanted, bags

"""Training items as flat arrays, each featurised once, known by a key made from its content.

A backbone whose items are one step each with bags of integer ids (``bow``) trains from
:class:`PackedItems`: per bag, the flat int32 ids of every item and each item's offset, which is
what ``nn.EmbeddingBag`` takes, so a batch is two numpy gathers and no Python per step. As Python
lists those ids took most of the 2.4 GB that one million labels needed.

An item is known by its **content key**: a 16-byte BLAKE2b chain over the problem and the steps up
to and including its own (``item_keys``), the same "same problem, same previous steps, same step"
as ``Item.key``, but stable across processes and machines, so the features can be kept on disk
(``prm.item_cache``) and a changed step text is a new item.

Rows that share a prefix (PRM800K's alternatives: each rated candidate is its own row and repeats
the chosen path before it) are featurised as a tree (``featurise``): the backbone's walker takes
each distinct step once and is forked where rows branch, so phase 1's 423,427 labels cost 41,051
steps instead of 423,427.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from prm.bags import Bags, BagWriter, bag_logits, concat_bags
from prm.data import Solution

if TYPE_CHECKING:
    import torch

    from prm.backbones.base import Backbone, Walking

KEY_BYTES = 16
GATHER_ITEMS = 1 << 16  # items per chunk when copying ids: bounds the index arrays' memory
PARALLEL_ITEMS = 4_000  # fewer missing items than this (about 1.5 s of work) stay in this process


def item_keys(problem: str, steps: Sequence[str]) -> list[bytes]:
    """The content key of each step of a solution (see the module docstring)."""
    h = hashlib.blake2b(b"prm-item\0" + problem.encode("utf-8"), digest_size=KEY_BYTES).digest()
    out = []
    for step in steps:
        h = hashlib.blake2b(h + step.encode("utf-8"), digest_size=KEY_BYTES).digest()
        out.append(h)
    return out


def keys_array(keys: Sequence[bytes]) -> np.ndarray:
    """Keys as an (n, 2) uint64 array (what the cache stores and searches)."""
    return np.frombuffer(b"".join(keys), dtype=np.uint64).reshape(-1, 2).copy()


@dataclass
class RowIndex:
    """The distinct items of some rows, in first-seen order, and where each row's steps are.

    ``row_items[row_starts[r] + i]`` is the item of step ``i`` of row ``r``; an item's label is
    the one of its first row (as ``step_examples`` and the metrics take it).
    """

    keys: np.ndarray  # (n, 2) uint64
    labels: np.ndarray  # (n,) bool
    row_items: np.ndarray  # int64, one per step of every row
    row_starts: np.ndarray  # int64, len(rows) + 1

    def __len__(self) -> int:
        return len(self.labels)

    @classmethod
    def build(cls, rows: Sequence[Solution]) -> RowIndex:
        seen: dict[bytes, int] = {}
        keys: list[bytes] = []
        labels: list[bool] = []
        row_items = np.empty(sum(len(s.steps) for s in rows), dtype=np.int64)
        row_starts = np.zeros(len(rows) + 1, dtype=np.int64)
        at = 0
        for r, s in enumerate(rows):
            assert s.labels is not None, "the rows of a training set carry labels"
            for key, label in zip(item_keys(s.problem, s.steps), s.labels, strict=True):
                j = seen.get(key)
                if j is None:
                    j = seen[key] = len(keys)
                    keys.append(key)
                    labels.append(bool(label))
                row_items[at] = j
                at += 1
            row_starts[r + 1] = at
        return cls(
            keys_array(keys) if keys else np.zeros((0, 2), np.uint64),
            np.asarray(labels, dtype=bool),
            row_items,
            row_starts,
        )

    def per_row(self, values: np.ndarray) -> list[np.ndarray]:
        """Per-item ``values`` as one array per row, in the rows' step order."""
        flat = values[self.row_items]
        return np.split(flat, self.row_starts[1:-1]) if len(self.row_starts) > 1 else []


# -- packed bags ---------------------------------------------------------------------------------


def empty_bags(names: Sequence[str], n: int = 0) -> Bags:
    return {name: (np.zeros(0, np.int32), np.zeros(n + 1, np.int64)) for name in names}


def copy_items(
    dst: tuple[np.ndarray, np.ndarray],
    dst_items: np.ndarray,
    src: tuple[np.ndarray, np.ndarray],
    src_items: np.ndarray,
) -> None:
    """Copy the ids of items ``src_items`` of ``src`` into items ``dst_items`` of ``dst``, whose
    offsets already give each item its length; in chunks, so the index arrays stay small."""
    dst_flat, dst_off = dst
    src_flat, src_off = src
    for a in range(0, len(src_items), GATHER_ITEMS):
        s, d = src_items[a : a + GATHER_ITEMS], dst_items[a : a + GATHER_ITEMS]
        lengths = src_off[s + 1] - src_off[s]
        total = int(lengths.sum())
        if not total:
            continue
        before = np.zeros(len(lengths), np.int64)
        np.cumsum(lengths[:-1], out=before[1:])
        within = np.arange(total, dtype=np.int64) - np.repeat(before, lengths)
        dst_flat[np.repeat(dst_off[d], lengths) + within] = src_flat[
            np.repeat(src_off[s], lengths) + within
        ]


def gather(bag: tuple[np.ndarray, np.ndarray], idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The items ``idx`` of one bag, in that order, as a new (flat, offsets) pair."""
    flat, off = bag
    lengths = off[idx + 1] - off[idx]
    out_off = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(lengths, out=out_off[1:])
    out = (np.empty(int(out_off[-1]), flat.dtype), out_off)
    copy_items(out, np.arange(len(idx), dtype=np.int64), bag, np.asarray(idx, dtype=np.int64))
    return out


class PackedItems:
    """Items of one-step-per-item backbones as flat arrays: ``bags`` and a label per item."""

    def __init__(self, keys: np.ndarray, bags: Bags, labels: np.ndarray | None = None) -> None:
        self.keys, self.bags, self.labels = keys, bags, labels

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def training_labels(self) -> np.ndarray:
        """The labels of items trained on (items packed for scoring have none)."""
        if self.labels is None:
            raise ValueError("items without labels cannot be trained on")
        return self.labels

    def batch(self, idx: np.ndarray) -> dict[str, Any]:
        """The backbone's input for items ``idx`` (what ``collate`` gives for the same items)."""
        import torch

        out = {}
        for name, bag in self.bags.items():
            flat, off = gather(bag, idx)
            out[name] = torch.from_numpy(flat.astype(np.int64))
            out[name + "_offsets"] = torch.from_numpy(off[:-1])
        return out

    def logits(
        self, backbone: Backbone, *, device: torch.device | str, batch_size: int = 65536
    ) -> np.ndarray:
        """Every item's logit, in order (``prm.bags.bag_logits``)."""
        return bag_logits(backbone, self.bags, len(self), device=device, batch_size=batch_size)

    def fired(self, name: str, width: int) -> np.ndarray:
        """(items, width) bool: which ids of bag ``name`` each item holds (the checks)."""
        flat, off = self.bags[name]
        out = np.zeros((len(self), width), dtype=bool)
        out[np.repeat(np.arange(len(self)), np.diff(off)), flat] = True
        return out


# -- featurising as a tree -------------------------------------------------------------------------


# One problem's tree of items to featurise: (problem, item -> next items, item -> step text).
TreeJob = tuple[str, dict[int, list[int]], dict[int, str]]


def _tree_jobs(rows: Sequence[Solution], index: RowIndex, missing: np.ndarray) -> list[TreeJob]:
    """Per problem: its children lists (item -> next items, -1 the problem itself) and texts,
    over the rows' steps up to their last missing item."""
    by_problem: dict[str, tuple[dict[int, list[int]], dict[int, str]]] = {}
    for r, s in enumerate(rows):
        items = index.row_items[index.row_starts[r] : index.row_starts[r + 1]]
        wanted = np.flatnonzero(missing[items])
        if not len(wanted):
            continue
        children, texts = by_problem.setdefault(s.problem, ({}, {}))
        parent = -1
        for i in range(int(wanted[-1]) + 1):
            item = int(items[i])
            if item not in texts:
                texts[item] = s.steps[i]
                children.setdefault(parent, []).append(item)
            parent = item
    return [(problem, children, texts) for problem, (children, texts) in by_problem.items()]


def _walk(
    backbone: Walking, jobs: Sequence[TreeJob], missing: np.ndarray
) -> tuple[np.ndarray, Bags]:
    """Featurise the missing items of these trees; returns their item numbers and bags."""
    done: list[int] = []
    bags = BagWriter()
    for problem, children, texts in jobs:
        stack = [(backbone.walker(problem), -1)]
        while stack:
            walker, node = stack.pop()
            kids = children.get(node, ())
            for k, child in enumerate(kids):
                w = walker if k == len(kids) - 1 else walker.fork()
                features = w.step(texts[child])
                if missing[child]:
                    done.append(child)
                    bags.add(features)
                stack.append((w, child))
    return np.asarray(done, dtype=np.int64), bags.bags()


def _walk_part(
    shared: tuple[Walking, Sequence[TreeJob], np.ndarray], span: tuple[int, int]
) -> tuple[np.ndarray, Bags]:
    backbone, jobs, missing = shared
    return _walk(backbone, jobs[span[0] : span[1]], missing)


def featurise(
    backbone: Walking,
    rows: Sequence[Solution],
    index: RowIndex,
    missing: np.ndarray,
    *,
    workers: int = 1,
) -> tuple[np.ndarray, Bags]:
    """The features of the ``missing`` items (a bool per item of ``index``), each computed once.

    Returns the item numbers featurised (sorted) and their bags in that order. With ``workers``
    above 1 and enough to do, that many forked processes share the problems (featurising is pure
    Python; ``prm.runtime.forked_map``, which runs them here inside a daemonic process).
    """
    jobs = _tree_jobs(rows, index, missing)
    if not jobs:
        return np.zeros(0, np.int64), {}
    if workers > 1 and int(missing.sum()) >= PARALLEL_ITEMS:
        done, bags = _parallel_walk(backbone, jobs, missing, workers)
    else:
        done, bags = _walk(backbone, jobs, missing)
    order = np.argsort(done, kind="stable")
    if (order != np.arange(len(order))).any():
        bags = {name: gather(bag, order) for name, bag in bags.items()}
    return done[order], bags


def _parallel_walk(
    backbone: Walking, jobs: Sequence[TreeJob], missing: np.ndarray, workers: int
) -> tuple[np.ndarray, Bags]:
    from prm.runtime import forked_map

    backbone.walker("")  # warm the checks' parser once, before forking (each child has it)
    size = max(1, -(-len(jobs) // (workers * 8)))
    spans = [(a, min(a + size, len(jobs))) for a in range(0, len(jobs), size)]
    parts = forked_map(_walk_part, (backbone, jobs, missing), spans, workers=workers)
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros(0, np.int64), {}
    return np.concatenate([p[0] for p in parts]), concat_bags([p[1] for p in parts])


def default_workers() -> int:
    """Featurising processes: ``PRM_WORKERS``, else the CPUs this process may use (at most 8)."""
    env = os.environ.get("PRM_WORKERS")
    if env:
        return max(1, int(env))
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(n, 8))

"""Step features as flat embedding bags: how ``bow``'s features are kept, joined and run.

A bag is what ``nn.EmbeddingBag`` takes: the flat int32 ids of every step and each step's offset
(``n + 1`` int64 numbers). The training items (``prm.items.PackedItems``) and the open solutions'
feature cache (``prm.feature_cache.Features``) hold their features this way, so one forward pass
over a million steps needs no Python per step, and both build, join and run them here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

    from prm.backbones.base import Backbone

Bags = dict[str, tuple[np.ndarray, np.ndarray]]  # name -> (flat int32 ids, int64 offsets n + 1)
FLUSH_STEPS = 20_000  # steps featurised between conversions of id lists to arrays


class BagWriter:
    """Collects the features of steps one at a time into bags.

    Ids go into int32 arrays every ``FLUSH_STEPS`` steps: as Python lists of ints a million steps
    would take over a gigabyte.
    """

    def __init__(self) -> None:
        self.steps = 0
        self._flat: dict[str, list[int]] = {}
        self._lengths: dict[str, list[int]] = {}
        self._done_flat: dict[str, list[np.ndarray]] = {}
        self._done_lengths: dict[str, list[np.ndarray]] = {}
        self._pending = 0

    def add(self, features: Mapping[str, Sequence[int]]) -> None:
        """One step's features (bag name -> ids)."""
        for name, ids in features.items():
            self._flat.setdefault(name, []).extend(ids)
            self._lengths.setdefault(name, []).append(len(ids))
        self.steps += 1
        self._pending += 1
        if self._pending >= FLUSH_STEPS:
            self._flush()

    def _flush(self) -> None:
        for name, flat in self._flat.items():
            self._done_flat.setdefault(name, []).append(np.asarray(flat, dtype=np.int32))
            self._done_lengths.setdefault(name, []).append(
                np.asarray(self._lengths[name], dtype=np.int64)
            )
            self._flat[name], self._lengths[name] = [], []
        self._pending = 0

    def bags(self) -> Bags:
        """The bags of every step added, in order."""
        self._flush()
        out: Bags = {}
        for name, flats in self._done_flat.items():
            lengths = np.concatenate(self._done_lengths[name])
            off = np.zeros(len(lengths) + 1, np.int64)
            np.cumsum(lengths, out=off[1:])
            out[name] = (np.concatenate(flats), off)
        return out


def concat_bags(parts: Sequence[Bags]) -> Bags:
    """Bags end to end (a bag missing from a part holds no ids for its steps; ``steps`` of each
    part must then be known to the caller, so every part here carries every name it has steps
    for)."""
    names = sorted(set().union(*(p.keys() for p in parts))) if parts else []
    out: Bags = {}
    for name in names:
        flats, offs, shift = [], [np.zeros(1, np.int64)], 0
        for part in parts:
            if name not in part:
                continue
            flat, off = part[name]
            flats.append(flat)
            offs.append(off[1:] + shift)
            shift += int(off[-1])
        out[name] = (np.concatenate(flats), np.concatenate(offs))
    return out


def bag_logits(
    backbone: Backbone,
    bags: Bags,
    steps: int,
    *,
    device: torch.device | str = "cpu",
    batch_size: int = 65536,
) -> np.ndarray:
    """Every step's logit, in order, ``batch_size`` steps a forward pass (the model in eval mode,
    restored afterwards)."""
    import torch

    out = np.empty(steps, dtype=np.float64)
    was_training = backbone.training
    backbone.eval()
    with torch.inference_mode():
        for a in range(0, steps, batch_size):
            b = min(a + batch_size, steps)
            batch: dict[str, Any] = {}
            for name, (flat, off) in bags.items():
                batch[name] = torch.from_numpy(flat[off[a] : off[b]].astype(np.int64))
                batch[name + "_offsets"] = torch.from_numpy(off[a:b] - off[a])
            batch = {k: v.to(device) for k, v in batch.items()}
            out[a:b] = backbone(batch).float().cpu().numpy()
    backbone.train(was_training)
    return out

"""Featurised training items kept on disk between trainings, by content key, bounded in size.

Featurising is most of the cost of training ``bow`` (tokens, hashed n-grams, structural tokens
and the exact checks, all pure Python: about 0.4 ms a step), and an item's features depend only
on its content and the featurisation settings, never on the weights. Active learning retrains on
the labels so far, so each run would featurise again everything the previous run did. With a
cache a run featurises only the items it has not seen: new labels, and steps whose text changed
(the key is made from the text, ``prm.items.item_keys``).

Layout: ``<root>/items-<featurisation key>/shard-<digest>.npz``. A shard holds some items' keys
((n, 2) uint64) and, per bag, flat int32 ids and int64 offsets. Nothing is ever written in place:

- a run writes the items it featurised as a new shard (a temporary name, then one rename), so a
  reader sees a whole shard or none, whoever else (another worker, another machine on the same
  mount) writes at the same time; two writers of the same items write the same name and content;
- when the shards hold more than ``MAX_SHARDS`` files or more than ``KEEP_FACTOR`` times the items
  the run used, the run writes one shard with exactly its items and deletes the shards it read
  (never one that appeared since): the cache stays within about twice what the latest run needs;
- a shard that vanished between listing and reading (compacted by another process), or that
  cannot be read, is skipped: its items are featurised again. It is only a cache: whatever it
  holds, training on it gives exactly what training without it gives.

The featurisation key is the hash of ``backbone.featurisation()`` (settings and
``FEATURES_VERSION``); directories of other keys that nobody used for ``PRUNE_AFTER_S`` are
removed when a run writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from prm.bags import Bags
from prm.items import copy_items

if TYPE_CHECKING:
    from prm.backbones.base import Backbone

MAX_SHARDS = 8
KEEP_FACTOR = 2.0
PRUNE_AFTER_S = 7 * 24 * 3600
STALE_TMP_S = 3600


def featurisation_key(backbone: Backbone) -> str:
    describe = getattr(backbone, "featurisation", None) or backbone.describe
    blob = json.dumps(describe(), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class Found:
    """Where the cache has some of the wanted items: ``items[k]`` (a wanted item's number) is item
    ``positions[k]`` of ``shard``."""

    shard: Path
    items: np.ndarray
    positions: np.ndarray
    lengths: dict[str, np.ndarray] = field(default_factory=dict)


class ItemCache:
    """The shards of one featurisation key under ``root`` (see the module docstring)."""

    def __init__(self, root: str | Path, backbone: Backbone) -> None:
        self.root = Path(root)
        self.key = featurisation_key(backbone)
        self.folder = self.root / f"items-{self.key}"
        self.read: list[Path] = []  # the shards ``lookup`` listed
        self.cached_items = 0  # items in those shards (duplicates counted)

    def _shards(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(self.folder.glob("shard-*.npz"))

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, list[Found]]:
        """Which of ``keys`` ((n, 2) uint64) the cache holds: a bool per key, and where.

        Reads only the shards' keys and offsets; ``fill`` copies the ids afterwards.
        """
        found = np.zeros(len(keys), dtype=bool)
        out: list[Found] = []
        self.read, self.cached_items = self._shards(), 0
        if self.folder.is_dir():
            os.utime(self.folder)  # in use: see PRUNE_AFTER_S
        if not len(keys):
            return found, out
        for shard in self.read:
            try:
                with np.load(shard) as data:
                    shard_keys = data["keys"]
                    self.cached_items += len(shard_keys)
                    want = np.flatnonzero(~found)
                    if not len(want):
                        continue
                    items, positions = _match(keys[want], shard_keys)
                    if not len(items):
                        continue
                    items = want[items]
                    lengths = {}
                    for name in data.files:
                        if name.startswith("bag_") and name.endswith("_offsets"):
                            off = data[name]
                            lengths[name[4:-8]] = off[positions + 1] - off[positions]
            except (OSError, ValueError, KeyError, EOFError):  # gone or unreadable: featurise
                continue
            found[items] = True
            out.append(Found(shard, items, positions, lengths))
        return found, out

    def fill(self, bags: Bags, found: list[Found]) -> np.ndarray:
        """Copy the found items' ids into ``bags`` (offsets already set); returns a bool per item
        of those it could copy (a shard deleted since ``lookup`` leaves its items out)."""
        n = len(next(iter(bags.values()))[1]) - 1 if bags else 0
        copied = np.zeros(n, dtype=bool)
        for f in found:
            try:
                with np.load(f.shard) as data:
                    for name, bag in bags.items():
                        src = (data[f"bag_{name}_ids"], data[f"bag_{name}_offsets"])
                        copy_items(bag, f.items, src, f.positions)
            except (OSError, ValueError, KeyError, EOFError):
                continue
            copied[f.items] = True
        return copied

    def add(self, keys: np.ndarray, bags: Bags) -> Path | None:
        """Keep these newly featurised items as one more shard."""
        return self._write(keys, bags) if len(keys) else None

    def compact(self, keys: np.ndarray, bags: Bags) -> int:
        """Replace the shards ``lookup`` read by one holding exactly these items (every item the
        run used, the new ones included); returns how many shards were removed."""
        target = self._write(keys, bags)
        removed = 0
        for shard in self.read:
            if shard != target:
                shard.unlink(missing_ok=True)
                removed += 1
        return removed

    def needs_compaction(self, used: int, fresh: int) -> bool:
        """Whether the shards, once ``fresh`` items are added, exceed the bounds for a run that
        used ``used`` items."""
        shards = len(self.read) + (1 if fresh else 0)
        return shards > MAX_SHARDS or self.cached_items + fresh > KEEP_FACTOR * used

    def _write(self, keys: np.ndarray, bags: Bags) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        arrays = {"keys": keys}
        for name, (flat, off) in bags.items():
            arrays[f"bag_{name}_ids"], arrays[f"bag_{name}_offsets"] = flat, off
        digest = hashlib.sha256(keys.tobytes()).hexdigest()[:24]
        target = self.folder / f"shard-{digest}.npz"
        tmp = self.folder / f".tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz"
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub: a key could be allow_pickle
        os.replace(tmp, target)
        self._tidy()
        return target

    def _tidy(self) -> None:
        now = time.time()
        for tmp in self.folder.glob(".tmp-*"):  # left by a process killed while writing
            try:
                if now - tmp.stat().st_mtime > STALE_TMP_S:
                    tmp.unlink(missing_ok=True)
            except OSError:
                pass
        for other in self.root.glob("items-*"):
            try:
                if other != self.folder and now - other.stat().st_mtime > PRUNE_AFTER_S:
                    shutil.rmtree(other, ignore_errors=True)
            except OSError:
                pass


def _match(wanted: np.ndarray, stored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``wanted`` of keys that ``stored`` holds, and where (both (n, 2) uint64)."""
    if not len(stored) or not len(wanted):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(stored[:, 0], kind="stable")
    first = stored[order, 0]
    at = np.searchsorted(first, wanted[:, 0])
    at = np.minimum(at, len(first) - 1)
    hit = (first[at] == wanted[:, 0]) & (stored[order[at], 1] == wanted[:, 1])
    items = np.flatnonzero(hit)
    return items, order[at[hit]]

"""What every backbone shares: the :class:`Item` it prepares, the :class:`Backbone` protocol, and
the helpers for prefix keys, embedding bags and structural-token ids."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from prm.features import stable_hash

STRUCTURE_BUCKETS = 4096


@dataclass
class Item:
    """One unit of input: it yields logits for ``steps`` (indices into its solution's steps).

    ``key`` identifies what the item's output depends on, so identical items (the shared prefix of
    PRM800K alternatives) are trained on and scored once.
    """

    features: dict[str, Any]
    steps: tuple[int, ...]
    key: Any
    labels: tuple[bool, ...] | None = None
    size: int = 1  # for batching similar lengths together
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def training_labels(self) -> tuple[bool, ...]:
        """The labels of an item trained on (an item made for scoring has none)."""
        if self.labels is None:
            raise ValueError("an item without labels cannot be trained on")
        return self.labels


@lru_cache(maxsize=4096)
def _structure_id(token: str) -> int:
    return stable_hash("s:" + token) % STRUCTURE_BUCKETS


def structure_ids(tokens_: list[str]) -> list[int]:
    return [_structure_id(t) for t in tokens_]


class HashCache(dict[str, int]):
    """token -> stable hash, computed on first use (hashing dominates featurisation)."""

    def __missing__(self, token: str) -> int:
        value = self[token] = stable_hash(token)
        return value


def prefix_keys(problem: str, steps: Sequence[str]) -> list[tuple[str, int, str]]:
    """A key per step for "same problem, same previous steps, same step", in O(1) per step.

    The previous steps enter through a hash chain (exact on the problem and the step itself), so
    a 50-step solution does not build 50 growing tuples.
    """
    keys, chain = [], 0
    for step in steps:
        keys.append((problem, chain, step))
        chain = hash((chain, step))
    return keys


_IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), frozenset, range, type)


def fork_state(value: Any) -> Any:
    """A copy of a featuriser's state that a step taken on it never reaches back from.

    Built-in containers are copied all the way down; immutable values (and frozen dataclasses,
    such as the checks' parsed expressions, whose syntax trees are never changed) are shared;
    other objects with attributes are forked attribute by attribute, anything else is
    deep-copied. About 20x cheaper than ``copy.deepcopy`` on the checks' state, which is what
    makes featurising a PRM800K problem's rows as a tree (``prm.items``) pay.
    """
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is list:
        return [fork_state(v) for v in value]
    if kind is dict:
        return {k: fork_state(v) for k, v in value.items()}
    if kind is set:
        return set(value)
    if kind is tuple:
        return tuple(fork_state(v) for v in value)
    params = getattr(kind, "__dataclass_params__", None)
    if params is not None and params.frozen:
        return value
    if hasattr(value, "__dict__") and not hasattr(kind, "__slots__"):
        twin = object.__new__(kind)
        twin.__dict__.update({k: fork_state(v) for k, v in vars(value).items()})
        return twin
    return copy.deepcopy(value)


def bagged(lists: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat ids and offsets for ``nn.EmbeddingBag``."""
    offsets = [0]
    for ids in lists[:-1]:
        offsets.append(offsets[-1] + len(ids))
    flat = [i for ids in lists for i in ids]
    return torch.tensor(flat, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


class Walker(Protocol):
    """One solution's featuriser, a step at a time (``bow``'s ``BowWalker``)."""

    def step(self, step: str) -> dict[str, Any]:
        """The features of the next step (bag name -> ids), remembering what it establishes."""
        ...

    def fork(self) -> Walker:
        """A copy that continues from the same state (rows that share a prefix)."""
        ...


@runtime_checkable
class Walking(Protocol):
    """A backbone that featurises a solution's steps one at a time: what ``prm.items`` and the
    feature cache need of ``bow`` (they fork a walker where rows branch)."""

    def walker(self, problem: str) -> Walker: ...


class Backbone(nn.Module):
    """The protocol every backbone follows (see the module docstring)."""

    name = "?"

    def describe(self) -> dict[str, Any]:
        raise NotImplementedError

    def prepare(self, problem: str, steps: Sequence[str]) -> list[Item]:
        raise NotImplementedError

    def collate(self, items: Sequence[Item]) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    def prepare_training(
        self, items: list[Item], *, device: torch.device, cache_dir: str | None = None
    ) -> None:
        """Precompute what stays fixed during training (frozen layers); a no-op by default."""

    def saved_state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}

    def load_saved_state(self, state: dict[str, torch.Tensor]) -> None:
        self.load_state_dict(state)

    def save_extra(self, directory: Path) -> None:
        """Files besides the weights that loading needs (a tokenizer, a model config)."""

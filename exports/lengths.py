"""What TRL's ``PRMTrainer`` would cut off a ``trl`` export, and rows cut so that it cuts nothing.

``PRMTrainer.tokenize_row`` (trl 1.13) tokenizes the prompt (after the tokenizer's BOS token, if
it has one) and each step followed by ``step_separator``, puts a step's label on the last token of
its separator, and then keeps the first ``max_length`` tokens: truncation from the right. The
negative step is the last labelled one of a path (``cut_after_first_negative``), so on long rows
it is the label that goes first. :class:`LengthFit` measures each row the same way and counts
the labels past ``max_length``; with ``keep_labels`` it rewrites the rows so that none is:

- a row whose steps fit keeps them all and loses the start of its prompt (truncated from the
  left, at a token boundary);
- a row whose steps do not fit is split into windows, consecutive runs of steps each ending on a
  labelled step; a window's prompt is the problem and the steps before it (unlabelled context),
  truncated from the left to what the window leaves free (at least a quarter of ``max_length``
  is kept for it);
- a single step longer than ``max_length`` loses the start of its own text, never its label.

Each label appears in exactly one output row, so the export's label counts do not change; the
rewritten rows are measured again, and what the manifest reports after fitting is measured,
not assumed.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from exports.policy import ExportError

TRL_DEFAULT_SEPARATOR = "\n"
TRL_DEFAULT_MAX_LENGTH = 1024


def tokenizer_choices() -> list[tuple[str, str]]:
    """The tokenizers the operator declared (``STEPWISE_EXPORT_TOKENIZERS``), for the web form."""
    return [(name, name) for name in settings.STEPWISE_EXPORT_TOKENIZERS]


def check_declared_tokenizer(name: str) -> None:
    """Refuse a tokenizer the operator did not declare: the web and API never read a path."""
    if name and name not in settings.STEPWISE_EXPORT_TOKENIZERS:
        declared = ", ".join(settings.STEPWISE_EXPORT_TOKENIZERS) or "none declared"
        raise ExportError(
            f"tokenizer {name!r} is not one the operator declared ({declared}; "
            "STEPWISE_EXPORT_TOKENIZERS)"
        )


def tokenizer_label(name: str) -> str:
    """How a manifest names the tokenizer: a declared name or a hub id as given, a local folder
    (the command line takes one) by its last part only. A manifest travels with the data set:
    it must not carry the server's paths (issue 41)."""
    if not name or name in settings.STEPWISE_EXPORT_TOKENIZERS:
        return name
    path = Path(name).expanduser()
    if path.is_absolute() or name.startswith((".", "~")) or path.is_dir():
        return path.resolve().name or name
    return name


def load_tokenizer(name: str) -> Any:
    """A fast tokenizer by declared name, local folder or cached hub id, never downloaded."""
    source = settings.STEPWISE_EXPORT_TOKENIZERS.get(name, name)
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    except ImportError as error:
        raise ExportError(f"tokenizer {name!r}: transformers is not installed") from error
    except (OSError, ValueError) as error:
        raise ExportError(f"tokenizer {name!r} cannot be loaded offline: {error}") from error
    if not getattr(tokenizer, "is_fast", False):
        raise ExportError(f"tokenizer {name!r} is not a fast tokenizer (no token offsets)")
    # Rows are measured whatever their length: no warning about the model's own limit.
    tokenizer.model_max_length = sys.maxsize
    return tokenizer


@dataclass
class Measure:
    """Counts of one pass over the rows: records, those cut, labels cut by value."""

    records: int = 0
    records_cut: int = 0
    records_with_negative: int = 0
    records_losing_negative: int = 0
    labels_cut: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "records_cut": self.records_cut,
            "records_with_negative": self.records_with_negative,
            "records_losing_negative": self.records_losing_negative,
            "labels_cut": {
                "positive": self.labels_cut[True],
                "negative": self.labels_cut[False],
            },
        }


class LengthFit:
    """Measure ``trl`` rows as ``PRMTrainer`` tokenizes them; with ``keep_labels``, refit them."""

    def __init__(
        self, *, tokenizer: Any, name: str, max_length: int, separator: str, keep_labels: bool
    ) -> None:
        if max_length < 8:
            raise ExportError(f"max_length must be at least 8, not {max_length}")
        self.tokenizer = tokenizer
        self.name = name
        self.max_length = max_length
        self.separator = separator
        self.keep_labels = keep_labels
        self.bos = 0 if tokenizer.bos_token_id is None else 1
        self._lengths: dict[str, int] = {}
        self.separator_length = len(self._ids(separator))
        if self.separator_length == 0:
            raise ExportError(
                f"step_separator {separator!r} is no token of tokenizer {name!r}: the trainer "
                "would put every label on its step's own last token (use one it keeps, such "
                "as ' [SEP] ' for BERT-style tokenizers)"
            )
        self.before = Measure()
        self.after = Measure()
        self.prompts_truncated = 0
        self.steps_truncated = 0
        self.windows = 0

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> LengthFit | None:
        """The check the format options ask for, or None without a tokenizer."""
        name = options.get("tokenizer") or ""
        if not name:
            if options.get("keep_labels"):
                raise ExportError("keep_labels needs a tokenizer")
            return None
        return cls(
            tokenizer=load_tokenizer(name),
            name=name,
            max_length=int(options.get("max_length") or TRL_DEFAULT_MAX_LENGTH),
            separator=options.get("step_separator") or TRL_DEFAULT_SEPARATOR,
            keep_labels=bool(options.get("keep_labels")),
        )

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _length(self, text: str) -> int:
        """Tokens of ``text``; a problem's prompt and a path's prefix recur in many rows."""
        n = self._lengths.get(text)
        if n is None:
            if len(self._lengths) >= 100_000:  # memory stays bounded on any campaign
                self._lengths.clear()
            n = self._lengths[text] = len(self._ids(text))
        return n

    def _step_length(self, text: str) -> int:
        return self._length(text) + self.separator_length

    def _measure(self, into: Measure, prompt: str, completions: list[str], labels: list) -> None:
        end = self.bos + self._length(prompt)
        cut = []
        for text, label in zip(completions, labels, strict=True):
            end += self._step_length(text)
            if end > self.max_length:  # the label's token is at end - 1
                cut.append(label)
        into.records += 1
        into.labels_cut.update(cut)
        into.records_cut += bool(cut)
        into.records_with_negative += False in labels
        into.records_losing_negative += False in cut

    def _tail(self, text: str, budget: int) -> tuple[str, bool]:
        """The end of ``text`` in at most ``budget`` tokens (cut at a token boundary)."""
        encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
        if len(ids) <= budget:
            return text, False
        # Re-tokenizing a suffix can take more tokens than it had inside the whole text.
        for keep in range(budget, 0, -1):
            tail = text[offsets[len(ids) - keep][0] :]
            if self._length(tail) <= budget:
                return tail, True
        return "", True

    def rows(self, prompt: str, completions: list[str], labels: list) -> list[tuple]:
        """The row as ``(prompt, completions, labels)``, or the rows that replace it."""
        self._measure(self.before, prompt, completions, labels)
        rows = [(prompt, completions, labels)]
        if self.keep_labels:
            rows = self._fit(prompt, completions, labels)
        for row in rows:
            self._measure(self.after, *row)
        return rows

    def _fit(self, prompt: str, completions: list[str], labels: list) -> list[tuple]:
        room = self.max_length - self.bos
        step_room = room - self.separator_length
        steps = []
        for text in completions:
            if self._step_length(text) > room:
                text, _ = self._tail(text, step_room)
                self.steps_truncated += 1
            steps.append((text, self._step_length(text)))
        total = sum(n for _, n in steps)
        if self.bos + self._length(prompt) + total <= self.max_length:
            return [(prompt, [t for t, _ in steps], labels)]
        if total <= room:
            tail, cut = self._tail(prompt, room - total)
            self.prompts_truncated += cut
            return [(tail, [t for t, _ in steps], labels)]
        # Windows: runs of steps that leave at least a quarter of max_length to their context.
        capacity = room - self.max_length // 4
        rows, start = [], 0
        while start < len(steps):
            end, used = start, 0
            while end < len(steps) and (end == start or used + steps[end][1] <= capacity):
                used += steps[end][1]
                end += 1
            context = " ".join([prompt, *(t + self.separator for t, _ in steps[:start])])
            tail, cut = self._tail(context, room - used)
            self.prompts_truncated += cut
            rows.append((tail, [t for t, _ in steps[start:end]], labels[start:end]))
            start = end
        self.windows += len(rows)
        return rows

    def report(self) -> dict[str, Any]:
        """What the manifest says: the trainer's settings, the cuts before and after fitting."""
        return {
            "trainer": "trl PRMTrainer (tokenize_row: prompt after BOS, right truncation)",
            "tokenizer": self.name,
            "max_length": self.max_length,
            "step_separator": self.separator,
            "keep_labels": self.keep_labels,
            "as_exported": self.before.as_dict(),
            "as_written": self.after.as_dict(),
            "prompts_truncated": self.prompts_truncated,
            "steps_truncated": self.steps_truncated,
            "windows": self.windows,
        }

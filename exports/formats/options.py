"""The format options (beyond the label policy, which ``exports.policy`` declares): each one once,
with its default, bounds and help, and the formats that have it.

The export form (``exports.forms``), the API serializer (``exports.api``), the command's flags
(``export_dataset``) and the service's check (``registry.format_options``) are all built from
:data:`FORMAT_OPTIONS`, so a new option is one declaration here and its name in the formats'
``options``; none of them can drift from the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from exports.lengths import TRL_DEFAULT_MAX_LENGTH, TRL_DEFAULT_SEPARATOR, tokenizer_choices
from exports.policy import ExportError

DEFAULT_STEP_TAG = "ки"


@dataclass(frozen=True)
class FormatOption:
    """One format option as people set it: on the export page, over the API, on the command line.

    ``formats`` names the formats that have it (a request for another format with it is
    refused). ``max_chars`` bounds a text, ``min_value`` / ``max_value`` (inclusive) a number;
    ``keep_spaces`` keeps a text's surrounding spaces (a separator, a tag); ``blank`` says
    whether an empty text is allowed. ``choices`` is the web form's list (the API and the
    service refuse a tokenizer the operator did not declare; the command also reads a path).
    """

    name: str
    default: Any
    help: str
    formats: tuple[str, ...]
    label: str = ""
    max_chars: int | None = None
    min_value: int | None = None
    max_value: int | None = None
    keep_spaces: bool = False
    blank: bool = True
    choices: Callable[[], list[tuple[str, str]]] | None = None
    blank_choice: str = ""

    @property
    def type(self) -> type:
        """``bool``, ``str`` or ``int``: the default's type is the option's."""
        return type(self.default)

    @property
    def flag(self) -> str:
        """The command-line flag: ``--step-separator``."""
        return "--" + self.name.replace("_", "-")

    @property
    def scope(self) -> str:
        """Which formats have it, as the help texts say: ``trl, trl-parquet only``."""
        return f"{', '.join(self.formats)} only"

    def clean(self, value: Any) -> Any:
        """``value`` as the format reads it, or ``ExportError`` saying why it cannot be."""
        if self.type is int:
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise ExportError(f"{self.name} must be a whole number, not {value!r}") from None
            low, high = self.min_value, self.max_value
            if (low is not None and value < low) or (high is not None and value > high):
                raise ExportError(f"{self.name} must be from {low} to {high}, not {value}")
        elif self.type is str:
            if not self.blank and not str(value).strip():
                raise ExportError(f"{self.name} must not be blank")
            if self.blank:
                value = str(value or "")
        return value


TRL_FORMATS = ("trl", "trl-parquet")

FORMAT_OPTIONS: tuple[FormatOption, ...] = (
    FormatOption(
        "step_tag",
        DEFAULT_STEP_TAG,
        "the tag that ends each step in math-shepherd's input (its default: ки)",
        formats=("math-shepherd",),
        max_chars=20,
        keep_spaces=True,
        blank=False,
    ),
    FormatOption(
        "tokenizer",
        "",
        "the trainer's tokenizer, one the operator declared (STEPWISE_EXPORT_TOKENIZERS; the "
        "command also takes a local folder or a hub id in the cache): the manifest's "
        "length_check counts the labels TRL's PRMTrainer would cut off at max_length",
        formats=TRL_FORMATS,
        max_chars=200,
        choices=tokenizer_choices,
        blank_choice="none (no length check)",
    ),
    FormatOption(
        "max_length",
        TRL_DEFAULT_MAX_LENGTH,
        f"PRMConfig.max_length (default {TRL_DEFAULT_MAX_LENGTH})",
        formats=TRL_FORMATS,
        min_value=8,
        max_value=1_000_000,
    ),
    FormatOption(
        "step_separator",
        TRL_DEFAULT_SEPARATOR,
        "PRMConfig.step_separator (empty: TRL's default, a newline); ' [SEP] ' for BERT-style "
        "tokenizers",
        formats=TRL_FORMATS,
        max_chars=40,
        keep_spaces=True,
    ),
    FormatOption(
        "keep_labels",
        False,
        "with a tokenizer, rewrite the rows the trainer would cut so that every label stays "
        "within max_length (the prompt truncated from the left, or windows that each end on a "
        "labelled step)",
        formats=TRL_FORMATS,
        label="Keep every label within max_length",
    ),
)
OPTIONS_BY_NAME = {o.name: o for o in FORMAT_OPTIONS}


def option_defaults(fmt: str) -> dict[str, Any]:
    """The options of format ``fmt`` with their defaults (a ``Format``'s ``options``)."""
    return {o.name: o.default for o in FORMAT_OPTIONS if fmt in o.formats}


def options_refused(fmt: str, names: Iterable[str]) -> dict[str, str]:
    """Each of ``names`` that format ``fmt`` does not have, with what to tell the person."""
    return {
        name: f"Only {' and '.join(OPTIONS_BY_NAME[name].formats)} "
        f"{'has' if len(OPTIONS_BY_NAME[name].formats) == 1 else 'have'} it."
        for name in names
        if fmt not in OPTIONS_BY_NAME[name].formats
    }

"""Every format by name, and the checks of a request for one."""

from __future__ import annotations

from typing import Any

from exports.formats.agentprocessbench import AGENTPROCESSBENCH
from exports.formats.base import Format
from exports.formats.csv_labels import CSV
from exports.formats.math_shepherd import MATH_SHEPHERD
from exports.formats.options import OPTIONS_BY_NAME
from exports.formats.prm800k import PRM800K
from exports.formats.processbench import PROCESSBENCH
from exports.formats.trl import TRL, TRL_PARQUET
from exports.policy import ExportError
from labeling.models import Campaign

FORMATS: dict[str, Format] = {
    f.name: f
    for f in [PRM800K, TRL, TRL_PARQUET, PROCESSBENCH, MATH_SHEPHERD, CSV, AGENTPROCESSBENCH]
}


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise ExportError(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}") from None


def format_for(campaign: Campaign, name: str) -> Format:
    """``get_format``, refused with its reason where the campaign's kind of trace cannot be
    written in it (``labeling.traces``: PRM800K's lines hold no trajectory)."""
    spec = get_format(name)
    refusal = campaign.kind.export_refusal(spec.name)
    if refusal is not None:
        raise ExportError(f"{spec.name} cannot export this campaign: {refusal}")
    return spec


def format_options(fmt: Format, options: dict[str, Any] | None) -> dict[str, Any]:
    """The format's options with defaults filled in, each checked as declared
    (``exports.formats.options``); unknown or blank ones are refused."""
    options = dict(options or {})
    unknown = set(options) - set(fmt.options)
    if unknown:
        raise ExportError(f"{fmt.name} has no options {', '.join(sorted(unknown))}")
    merged = {**fmt.options, **options}
    for name, value in merged.items():
        merged[name] = OPTIONS_BY_NAME[name].clean(value)
    if merged.get("keep_labels") and not merged.get("tokenizer"):
        raise ExportError("keep_labels needs a tokenizer")
    return merged

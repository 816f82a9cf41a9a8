"""Dataset formats that PRM trainers read as they are: one module per format.

- ``prm800k``: PRM800K's raw label lines, field for field, one per submitted assignment;
- ``trl`` / ``trl-parquet``: TRL's stepwise supervision, ``{"prompt", "completions", "labels"}``;
- ``processbench``: ``{"id", "generator", "problem", "steps", "final_answer_correct", "label"}``;
- ``math-shepherd``: OpenRLHF / Math-Shepherd, ``{"input": "... Step 1: ... ки", "label": ["+"]}``;
- ``csv``: one row per step label, for analysts.

Each turns a solution from ``exports.reader`` into rows; ``exports.files.write_export`` writes
them. The names below are also importable from here, where callers outside the app find them.
"""

from __future__ import annotations

from exports.formats.base import Format
from exports.formats.csv_labels import CSV_COLUMNS
from exports.formats.options import DEFAULT_STEP_TAG, FORMAT_OPTIONS, FormatOption
from exports.formats.registry import FORMATS, format_options, get_format
from exports.policy import ExportError, LabelPolicy

__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_STEP_TAG",
    "FORMATS",
    "FORMAT_OPTIONS",
    "ExportError",
    "Format",
    "FormatOption",
    "LabelPolicy",
    "format_options",
    "get_format",
    "write_export",
]


def __getattr__(name: str):
    # The writer imports the formats, so it is loaded on first use rather than with them.
    if name == "write_export":
        from exports.files import write_export

        return write_export
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

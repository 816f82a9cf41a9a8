"""What every format is: a name, a file type, rows from a solution, and how it counts labels."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.utils import timezone

from exports.policy import MACHINE, POLICY_OPTIONS, LabelPolicy
from exports.reader import SolutionData

# The options that only select labels; the raw formats keep every rating as it was given.
RAW_OPTIONS = (
    "annotator_ids",
    "include_quality_control",
    "include_screening",
    "reviewed_only",
    "include_rejected",
    "include_superseded",
    "test_fraction",
    "split_seed",
    "math500",
    "machine_labels",
)
ALL_OPTIONS = tuple(o.name for o in POLICY_OPTIONS)
BINARY_NAMES = {True: "positive", False: "negative", None: "unlabelled"}
RAW_NAMES = {1: "positive", 0: "neutral", -1: "negative", None: "unrated"}

# Each yields (row, labels to count), or (row, labels, their sources) under the policy's
# ``machine_labels`` (the manifest counts labels by source then).
Rows = Callable[[SolutionData, LabelPolicy, dict], Iterator[tuple]]


@dataclass(frozen=True)
class Format:
    name: str
    extension: str
    writer: type
    rows: Rows
    applies: tuple[str, ...]
    rating_names: dict
    options: dict[str, Any] = field(default_factory=dict)
    # From the format options, an object whose rows() the format calls and whose report() goes
    # into the manifest as "length_check" (or None: nothing to check).
    length_check: Callable[[dict], Any] | None = None
    description: str = ""


class JsonlWriter:
    def __init__(self, path: Path, fmt: Format, policy: LabelPolicy | None = None) -> None:
        self._f = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        self._dumps = json.JSONEncoder(ensure_ascii=False).encode

    def write(self, row: dict) -> None:
        self._f.write(self._dumps(row))
        self._f.write("\n")

    def close(self) -> None:
        self._f.close()


def utc_naive_iso(dt: datetime | None) -> str | None:
    """A time as PRM800K writes it: UTC, without an offset, to the microsecond."""
    if dt is None:
        return None
    if timezone.is_aware(dt):
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return dt.isoformat(timespec="microseconds")


def with_sources(policy: LabelPolicy) -> bool:
    """Whether records name each label's source: under ``machine_labels`` only, so that the
    default export stays as it always was."""
    return policy.machine_labels != "never"


def add_sources(row: dict, sources: list[str], models: list[str]) -> dict:
    """Name each label's source in a JSON record (``label_sources``, parallel to its labels)
    and, when machines gave any of them, the machines (``machine_models``)."""
    row["label_sources"] = sources
    if models and MACHINE in sources:
        row["machine_models"] = models
    return row

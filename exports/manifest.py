"""The manifest beside every export: format, policy, counts, split, and each file's sha256."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.utils import timezone

from exports.formats.base import Format
from exports.lengths import tokenizer_label
from exports.policy import ADJUDICATED, HUMAN, MACHINE, SPLIT_HASH, LabelPolicy
from exports.reader import StreamStats
from labeling.models import Campaign

SOURCES = (HUMAN, ADJUDICATED, MACHINE)


@dataclass
class Tally:
    """What one file received: records, distinct problems and solutions, steps, labels by value.

    Solutions arrive ordered by problem, so a change of id is a new one.
    """

    records: int = 0
    problems: int = 0
    solutions: int = 0
    steps: int = 0
    ratings: Counter = field(default_factory=Counter)
    # Labels by source (human, adjudicated, machine:consensus): None when records name none.
    sources: Counter | None = None
    last_problem: int | None = None
    last_solution: int | None = None

    def add(
        self,
        *,
        solution_id: int,
        problem_id: int,
        labels: Sequence,
        sources: Sequence[str] | None = None,
    ) -> None:
        """Count one record of the solution, with the labels it carries and their sources."""
        self.records += 1
        self.steps += len(labels)
        self.ratings.update(labels)
        if sources is not None:
            if self.sources is None:
                self.sources = Counter()
            self.sources.update(sources)
        if self.last_solution != solution_id:
            self.last_solution = solution_id
            self.solutions += 1
            if self.last_problem != problem_id:
                self.last_problem = problem_id
                self.problems += 1

    def as_dict(self, names: dict, *, sources: bool = False) -> dict[str, Any]:
        """The counts; with ``sources`` also labels by source (every source, 0 when none)."""
        ratings = dict.fromkeys(names.values(), 0)
        for value, n in self.ratings.items():
            ratings[names[value]] += n
        counts: dict[str, Any] = {
            "records": self.records,
            "problems": self.problems,
            "solutions": self.solutions,
            "steps": self.steps,
            "ratings": ratings,
        }
        if sources:
            counts["sources"] = dict.fromkeys(SOURCES, 0) | dict(self.sources or {})
        return counts


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def manifest_write(
    *,
    path: Path,
    spec: Format,
    format_options: dict[str, Any],
    policy: LabelPolicy,
    campaign: Campaign,
    files: dict[str, Path],
    tallies: dict[str, Tally],
    stats: StreamStats,
    length_check: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Describe the written ``files`` in a manifest at ``path``, and return it."""
    if format_options.get("tokenizer"):  # never the server's path to a tokenizer folder
        format_options = {
            **format_options,
            "tokenizer": tokenizer_label(format_options["tokenizer"]),
        }
    if length_check and length_check.get("tokenizer"):
        length_check = {**length_check, "tokenizer": tokenizer_label(length_check["tokenizer"])}
    sourced = policy.machine_labels != "never"
    counts = {split: t.as_dict(spec.rating_names, sources=sourced) for split, t in tallies.items()}
    manifest = {
        "format": spec.name,
        "description": spec.description,
        "format_options": format_options,
        "policy": policy.to_dict(),
        "policy_applies": list(spec.applies),
        "campaign": {"id": campaign.pk, "slug": campaign.slug, "name": campaign.name},
        # what answer_is_correct means in these files (labeling.grading.rules)
        "grading_rule": campaign.grading_rule,
        "created_at": timezone.now().isoformat(),
        "counts": counts,
        "split": {
            "splits": list(files),
            "by": SPLIT_HASH,
            "test_fraction": policy.test_fraction,
            "seed": policy.split_seed,
            "math500": policy.math500,
            "math500_problems_seen": stats.math500_problems,
            "problems_excluded": stats.excluded_problems,
            "problems": {split: counts[split]["problems"] for split in files},
        },
        "files": [
            {
                "name": file.name,
                "split": split,
                "records": tallies[split].records,
                "bytes": file.stat().st_size,
                "sha256": sha256_file(file),
            }
            for split, file in files.items()
        ],
        "manifest_name": path.name,
    }
    if length_check is not None:
        manifest["length_check"] = length_check
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=2)
        f.write("\n")
    return manifest

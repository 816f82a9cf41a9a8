"""``csv``: one row per step label, ratings as given (-1/0/1), for analysts."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from exports.formats.base import RAW_NAMES, RAW_OPTIONS, Format, utc_naive_iso, with_sources
from exports.policy import HUMAN, MACHINE, LabelPolicy
from exports.reader import SolutionData

CSV_COLUMNS = [
    "campaign",
    "problem_id",
    "problem_unique_id",
    "solution_id",
    "solution_kind",
    "generator",
    "assignment_id",
    "annotator",
    "step_index",
    "step_text",
    "rating",
    "flagged",
    "time_spent_ms",
    "submitted_at",
    "total_time_ms",
    "finish_reason",
    "answer_is_correct",
    "review",
    "corrected_rating",
    # submitted (current), rejected or superseded: the last two only with include_rejected /
    # include_superseded.
    "assignment_status",
    # annotators=weighted: the step's P(positive) from every annotator's ratings (Dawid-Skene,
    # ``exports.weighted``), the same on each annotator's row of the step; empty otherwise.
    "weighted_probability",
]
# Under the policy's machine_labels only (the default file keeps the columns above): each row's
# source (human, machine:consensus) and, on a machine row, the models that agreed, joined by ";".
SOURCE_COLUMNS = ["label_source", "machine_models"]


def csv_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """One row per step label of every exported assignment, ratings as given (-1/0/1); under
    ``machine_labels`` also one per machine label the policy keeps, each row with its source."""
    campaign = options["campaign_slug"]
    sourced = with_sources(policy)
    for a in solution.assignments:
        submitted = utc_naive_iso(a.submitted_at)
        for lab in a.labels:
            corrected = a.corrections.get(str(lab.index)) if a.corrections else None
            yield (
                [
                    campaign,
                    solution.problem_id,
                    solution.unique_id,
                    solution.id,
                    solution.kind,
                    solution.generator,
                    a.id,
                    a.annotator,
                    lab.index,
                    solution.steps[lab.index],
                    lab.rating,
                    lab.flagged,
                    lab.time_spent_ms,
                    submitted,
                    a.total_time_ms,
                    a.finish_reason,
                    solution.answer_is_correct,
                    a.review or "",
                    corrected,
                    a.status,
                    solution.probabilities.get(lab.index, ""),
                    *((HUMAN, "") if sourced else ()),
                ],
                (lab.rating,),
                *(((HUMAN,),) if sourced else ()),
            )
    for index, machine in sorted(solution.machine_kept(policy).items()):
        # One row per machine label, with no assignment: the columns of people are empty.
        yield (
            [
                campaign,
                solution.problem_id,
                solution.unique_id,
                solution.id,
                solution.kind,
                solution.generator,
                "",
                MACHINE,
                index,
                solution.steps[index],
                machine.rating,
                "",
                "",
                "",
                "",
                "",
                solution.answer_is_correct,
                "",
                "",
                "",
                "",
                MACHINE,
                ";".join(machine.models),
            ],
            (machine.rating,),
            (MACHINE,),
        )


class CsvWriter:
    def __init__(self, path: Path, fmt: Format, policy: LabelPolicy | None = None) -> None:
        self._f = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self._w = csv.writer(self._f)
        sourced = policy is not None and with_sources(policy)
        self._w.writerow(CSV_COLUMNS + SOURCE_COLUMNS if sourced else CSV_COLUMNS)
        self.write = self._w.writerow

    def close(self) -> None:
        self._f.close()


CSV = Format(
    "csv",
    ".csv",
    CsvWriter,
    csv_rows,
    RAW_OPTIONS,
    RAW_NAMES,
    description="One row per step label (CSV)",
)

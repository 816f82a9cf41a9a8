"""Dataset formats that PRM trainers read as they are, written by streaming the database.

One reader, :func:`iter_solutions`, walks a campaign's solutions in keyset batches ordered by
(problem, solution) and yields each with its steps and its exportable assignments and labels; it
holds one batch at a time, so memory stays flat whatever the campaign's size. Each format turns a
solution into rows; :func:`write_export` writes them to one file per split, counts what it wrote
and puts a manifest (policy, counts, split, sha256 of every file) beside the files.

Formats:

- ``prm800k``: PRM800K's raw label lines, field for field, one per submitted assignment;
- ``trl`` / ``trl-parquet``: TRL's stepwise supervision, ``{"prompt", "completions", "labels"}``;
- ``processbench``: ``{"id", "generator", "problem", "steps", "final_answer_correct", "label"}``;
- ``math-shepherd``: OpenRLHF / Math-Shepherd, ``{"input": "... Step 1: ... ки", "label": ["+"]}``;
- ``csv``: one row per step label, for analysts.

How labels become training examples is a :class:`LabelPolicy`; the raw formats (``prm800k``,
``csv``) use only its selection options (kinds, review, split), since they keep every rating.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Q
from django.utils import timezone

from common.readahead import read_ahead
from labeling.models import Assignment, Campaign, Review, Solution, Step, StepLabel

MATH500_PATH = Path(__file__).resolve().parent / "data" / "math500" / "test.jsonl"
SPLIT_HASH = "sha256 of the stripped problem text, salted with split_seed"

NEUTRAL_CHOICES = ("positive", "negative")
ANNOTATOR_CHOICES = ("majority", "unanimous", "each")
MATH500_CHOICES = ("ignore", "test", "exclude")

Progress = Callable[[int, int], None]
T = TypeVar("T")


class ExportError(ValueError):
    """A request for an export that cannot be honoured (unknown format, bad option)."""


# --------------------------------------------------------------------------------------------
# Label policy


@dataclass(frozen=True)
class LabelPolicy:
    """How human step labels become training examples, and which of them are exported.

    - ``neutral``: a neutral (0) rating counts as ``"positive"`` (the PRM800K paper's choice)
      or ``"negative"``.
    - ``cut_after_first_negative``: a path ends at its first negative step; what follows an
      error says little about the steps.
    - ``alternatives``: every other rated candidate at a position (PRM800K phase 1 offers several,
      phase 2 after the first error, and a human correction is one too) becomes its own example:
      the path before it plus that candidate. Without them a phase 1 export has almost no
      negative steps, since labelers always continued along a good candidate.
    - ``annotators``: several annotators on one solution give ``"majority"`` per step (a tie goes
      to the more negative label), ``"unanimous"`` (the path stops before the first step they
      disagree on) or ``"each"`` (one record per annotator).
    - ``include_quality_control`` / ``include_screening``: export those solutions' labels too.
    - ``reviewed_only``: only assignments a reviewer accepted. Rejected ones are never exported.
    - ``test_fraction`` / ``split_seed``: problems go to test when a salted hash of their text
      falls below the fraction, so a problem is never split and the split is stable across runs
      and machines.
    - ``math500``: MATH-500 problems (the PRM literature's test set) are left to the hash
      (``"ignore"``), forced into test (``"test"``), or left out (``"exclude"``).
    """

    neutral: str = "positive"
    cut_after_first_negative: bool = True
    alternatives: bool = True
    annotators: str = "majority"
    include_quality_control: bool = True
    include_screening: bool = True
    reviewed_only: bool = False
    test_fraction: float = 0.0
    split_seed: int = 0
    math500: str = "ignore"

    def __post_init__(self) -> None:
        if self.neutral not in NEUTRAL_CHOICES:
            raise ExportError(f"neutral must be one of {NEUTRAL_CHOICES}, not {self.neutral!r}")
        if self.annotators not in ANNOTATOR_CHOICES:
            raise ExportError(
                f"annotators must be one of {ANNOTATOR_CHOICES}, not {self.annotators!r}"
            )
        if self.math500 not in MATH500_CHOICES:
            raise ExportError(f"math500 must be one of {MATH500_CHOICES}, not {self.math500!r}")
        if not 0.0 <= self.test_fraction < 1.0:
            raise ExportError("test_fraction must be at least 0 and below 1")

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> LabelPolicy:
        data = dict(data or {})
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ExportError(f"unknown policy options: {', '.join(sorted(unknown))}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def splits(self) -> tuple[str, ...]:
        """The files an export writes: one, or a train and a test file."""
        if self.test_fraction > 0 or self.math500 == "test":
            return ("train", "test")
        return ("all",)

    @property
    def kinds(self) -> list[str]:
        kinds = [Solution.Kind.REGULAR]
        if self.include_quality_control:
            kinds.append(Solution.Kind.QUALITY_CONTROL)
        if self.include_screening:
            kinds.append(Solution.Kind.SCREENING)
        return kinds

    def split_of(self, problem_text: str) -> str | None:
        """The split a problem belongs to, or None when the policy leaves it out."""
        if self.math500 != "ignore" and is_math500(problem_text):
            return "test" if self.math500 == "test" else None
        if self.splits == ("all",):
            return "all"
        if self.test_fraction == 0:
            return "train"
        key = f"{self.split_seed}\0{problem_text.strip()}".encode()
        position = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2.0**64
        return "test" if position < self.test_fraction else "train"

    def label(self, rating: int | None) -> bool | None:
        """A rating as the binary label trainers see; None stays None (not rated)."""
        if rating is None:
            return None
        if rating == 0:
            return self.neutral == "positive"
        return rating > 0


@functools.cache
def _math500_hashes() -> frozenset[str]:
    with open(MATH500_PATH, encoding="utf-8") as f:
        return frozenset(
            hashlib.sha256(json.loads(line)["problem"].strip().encode()).hexdigest()
            for line in f
            if line.strip()
        )


def is_math500(problem_text: str) -> bool:
    """Whether a problem's text is one of MATH-500's (exact text, surrounding space aside)."""
    return hashlib.sha256(problem_text.strip().encode()).hexdigest() in _math500_hashes()


# --------------------------------------------------------------------------------------------
# Reading the database in batches


@dataclass(slots=True)
class LabelData:
    index: int
    rating: int | None
    flagged: bool | None
    time_spent_ms: int | None
    completion_index: int | None
    alternatives: list[dict]
    human_completion: dict | None
    chosen_completion: int | None

    def completions(self, step_text: str) -> list[dict]:
        # The model method is the one definition of how PRM800K's list is rebuilt; it reads
        # only fields this row shares with StepLabel.
        return StepLabel.completions(self, step_text)  # type: ignore[arg-type]


@dataclass(slots=True)
class AssignmentData:
    id: int
    annotator: str
    submitted_at: datetime | None
    finish_reason: str
    total_time_ms: int | None
    review: str | None
    corrections: dict[str, int]
    labels: list[LabelData] = field(default_factory=list)


@dataclass(slots=True)
class SolutionData:
    id: int
    campaign_id: int
    problem_id: int
    problem_text: str
    ground_truth_answer: str
    ground_truth_solution: str | None
    unique_id: str
    generator: str
    generation: int | None
    kind: str
    pre_generated: bool
    answer: str | None
    answer_is_correct: bool | None
    verifier_score: float | None
    split: str
    steps: list[str] = field(default_factory=list)
    assignments: list[AssignmentData] = field(default_factory=list)


_SOLUTION_FIELDS = (
    "id",
    "campaign_id",
    "problem_id",
    "problem__text",
    "problem__ground_truth_answer",
    "problem__ground_truth_solution",
    "problem__unique_id",
    "generator",
    "generation",
    "kind",
    "pre_generated",
    "answer",
    "answer_is_correct",
    "verifier_score",
)


@dataclass
class StreamStats:
    """What the reader saw, beyond the rows: for the manifest's split section."""

    math500_problems: int = 0
    excluded_problems: int = 0


def iter_solutions(
    *,
    campaign: Campaign,
    policy: LabelPolicy,
    batch_size: int = 2000,
    progress: Progress | None = None,
    stats: StreamStats | None = None,
) -> Iterator[SolutionData]:
    """Yield the campaign's solutions that have exportable labels, ordered by problem.

    Exportable: a submitted assignment on a solution of an included kind, not rejected by a
    reviewer (and accepted, with ``reviewed_only``), on a problem the policy keeps. Solutions come
    in keyset batches of ``batch_size``, each read with four queries (solutions with their
    problem, steps, assignments, labels); nothing outlives its batch but the next one, which a
    thread reads while this one is written (see ``common.readahead``).
    """
    batches = _batches(campaign, policy, batch_size, stats or StreamStats())
    if not connections[DEFAULT_DB_ALIAS].in_atomic_block:
        # Inside a transaction another thread's connection would not see its writes.
        batches = read_ahead(batches, name="export-reader")
    for solutions, done, total in batches:
        yield from solutions
        if progress:
            progress(done, total)


def _batches(
    campaign: Campaign, policy: LabelPolicy, batch_size: int, stats: StreamStats
) -> Iterator[tuple[list[SolutionData], int, int]]:
    """(solutions with labels, solutions read so far, solutions in all), batch by batch."""
    solutions = Solution.objects.filter(campaign=campaign, kind__in=policy.kinds)
    total = solutions.count()
    yield [], 0, total
    done = 0
    last_problem, last_solution = -1, -1
    current_problem: int | None = None
    current_split: str | None = None
    while True:
        # The redundant problem_id bound lets the index scan start at the last problem instead
        # of filtering from the beginning on every batch.
        batch = list(
            solutions.filter(problem_id__gte=last_problem)
            .filter(Q(problem_id__gt=last_problem) | Q(id__gt=last_solution))
            .order_by("problem_id", "id")
            .values_list(*_SOLUTION_FIELDS)[:batch_size]
        )
        if not batch:
            break
        last_problem, last_solution = batch[-1][2], batch[-1][0]
        done += len(batch)

        by_id: dict[int, SolutionData] = {}
        for row in batch:
            if row[2] != current_problem:
                current_problem = row[2]
                if is_math500(row[3]):
                    stats.math500_problems += 1
                current_split = policy.split_of(row[3])
                if current_split is None:
                    stats.excluded_problems += 1
            if current_split is None:
                continue
            by_id[row[0]] = SolutionData(*row, split=current_split)
        yield (list(_fill(by_id, policy)) if by_id else []), done, total


def _fill(by_id: dict[int, SolutionData], policy: LabelPolicy) -> Iterator[SolutionData]:
    """Attach steps, assignments and labels to one batch and yield the solutions with labels.

    Children are selected by the batch's window (its range of problem ids and of solution ids)
    rather than by a list of ids: PostgreSQL plans a list of thousands of literals slowly and
    then scans whole tables, while the ranges walk the indexes. A window may hold a few
    solutions of the batch's first or last problem that belong to the next batch or were not
    kept; their rows are dropped here.
    """
    first = next(iter(by_id.values()))
    ids = list(by_id)
    window = {
        "campaign_id": first.campaign_id,
        "problem_id__gte": first.problem_id,
        "problem_id__lte": by_id[ids[-1]].problem_id,
        "id__range": (min(ids), max(ids)),
    }
    solutions = Solution.objects.filter(**window).values("id")
    assignments = Assignment.objects.filter(
        solution_id__in=solutions, status=Assignment.Status.SUBMITTED
    )
    if policy.reviewed_only:
        assignments = assignments.filter(review__decision=Review.Decision.ACCEPTED)
    by_assignment: dict[int, AssignmentData] = {}
    for (
        a_id,
        s_id,
        annotator,
        submitted_at,
        reason,
        total,
        decision,
        corrections,
    ) in assignments.order_by("solution_id", "submitted_at", "id").values_list(
        "id",
        "solution_id",
        "annotator__username",
        "submitted_at",
        "finish_reason",
        "total_time_ms",
        "review__decision",
        "review__corrections",
    ):
        if decision == Review.Decision.REJECTED or s_id not in by_id:
            continue
        data = AssignmentData(
            a_id, annotator, submitted_at, reason, total, decision, corrections or {}
        )
        by_id[s_id].assignments.append(data)
        by_assignment[a_id] = data
    if not by_assignment:
        return

    steps = _raw_rows(
        Step.objects.filter(solution_id__in=solutions)
        .order_by("solution_id", "index")
        .values_list("solution_id", "text")
    )
    for s_id, rows in groupby(steps, key=itemgetter(0)):
        solution = by_id.get(s_id)
        if solution is not None:
            solution.steps = [text for _, text in rows]
    for a_id, index, rating, flagged, ms, own, alternatives, human, chosen in _raw_rows(
        StepLabel.objects.filter(
            assignment__solution_id__in=solutions, assignment__status=Assignment.Status.SUBMITTED
        )
        .order_by("assignment_id", "step__index")
        .values_list(
            "assignment_id",
            "step__index",
            "rating",
            "flagged",
            "time_spent_ms",
            "completion_index",
            "alternatives",
            "human_completion",
            "chosen_completion",
        )
    ):
        assignment = by_assignment.get(a_id)
        if assignment is not None:
            assignment.labels.append(
                LabelData(
                    index,
                    rating,
                    None if flagged is None else bool(flagged),  # SQLite gives 0/1
                    ms,
                    own,
                    [] if alternatives == "[]" else json.loads(alternatives),
                    None if human is None else json.loads(human),
                    chosen,
                )
            )
    for s_id in ids:
        solution = by_id[s_id]
        if solution.assignments:
            yield solution


def _raw_rows(queryset) -> list[tuple]:
    """A values_list queryset's rows as the database driver returns them.

    Skips Django's per-row converters on the two biggest tables (about ten rows per solution):
    JSON arrives as text and is parsed only when there is something in it, and booleans may be
    SQLite's 0/1, so callers convert the columns that need it.
    """
    sql, params = queryset.query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


# --------------------------------------------------------------------------------------------
# From labels to labelled paths (the training formats)


@dataclass(slots=True)
class LabelledPath:
    """A solution's steps ``steps[:len(labels)]`` with binary labels, and other candidates.

    ``candidates`` are ``(position, text, label)``: the path before ``position`` followed by
    ``text`` is an example of its own. ``annotator`` is None when several were combined.
    """

    annotator: str | None
    labels: list[bool]
    candidates: list[tuple[int, str, bool]]


def _annotator_labels(
    assignment: AssignmentData, policy: LabelPolicy
) -> tuple[list[bool], list[tuple[int, str, bool]]]:
    """One annotator's labels along the path, and their rated candidates.

    The path stops at its first gap or unrated step: a label after a hole has no prefix to sit
    on. A reviewer's correction replaces the rating it corrects. A step the labeler wrote
    themselves (PRM800K's human completion taking the place of every candidate) counts as
    positive unless it was rated: they wrote it as the right next step.
    """
    labels: list[bool] = []
    candidates: list[tuple[int, str, bool]] = []
    corrections = assignment.corrections
    for expected, lab in enumerate(assignment.labels):
        if lab.index != expected:
            break
        rating = lab.rating
        if corrections and str(lab.index) in corrections:
            rating = int(corrections[str(lab.index)])
        hc = lab.human_completion
        if rating is None and lab.completion_index is None and hc is not None:
            rating = 1
        if policy.alternatives:
            # The prefix before this position is fully labelled, so its candidates stand.
            for alt in lab.alternatives:
                value = policy.label(alt.get("rating"))
                if value is not None:
                    candidates.append((lab.index, alt["text"], value))
            if hc is not None and lab.completion_index is not None:
                hc_rating = 1 if hc.get("rating") is None else hc["rating"]
                candidates.append((lab.index, hc["text"], bool(policy.label(hc_rating))))
        value = policy.label(rating)
        if value is None:
            break
        labels.append(value)
    return labels, candidates


def _vote(votes: list[bool], mode: str) -> bool | None:
    """Combine several annotators' labels of one step: None means no agreed label."""
    positive = sum(votes)
    negative = len(votes) - positive
    if mode == "unanimous":
        return None if positive and negative else positive > 0
    return positive > negative  # majority; a tie goes to the more negative label


def labelled_paths(solution: SolutionData, policy: LabelPolicy) -> list[LabelledPath]:
    """The solution's labelled paths under the policy: one per annotator, or one combined."""
    per_annotator = [(a.annotator, *_annotator_labels(a, policy)) for a in solution.assignments]
    if policy.annotators == "each" or len(per_annotator) == 1:
        paths = [LabelledPath(name, labels, cands) for name, labels, cands in per_annotator]
    else:
        labels: list[bool] = []
        for position in range(max(len(lbls) for _, lbls, _ in per_annotator)):
            votes = [lbls[position] for _, lbls, _ in per_annotator if len(lbls) > position]
            value = _vote(votes, policy.annotators)
            if value is None:
                break
            labels.append(value)
        grouped: dict[tuple[int, str], list[bool]] = {}
        for _, _, cands in per_annotator:
            for position, text, value in cands:
                grouped.setdefault((position, text), []).append(value)
        candidates = []
        for (position, text), votes in grouped.items():
            value = _vote(votes, policy.annotators)
            if value is not None:
                candidates.append((position, text, value))
        paths = [LabelledPath(None, labels, candidates)]
    for path in paths:
        if policy.cut_after_first_negative and False in path.labels:
            del path.labels[path.labels.index(False) + 1 :]
        # A candidate needs its whole prefix labelled (and, when cutting, free of errors).
        end = len(path.labels)
        if policy.cut_after_first_negative and end and not path.labels[-1]:
            end -= 1
        path.candidates = [c for c in path.candidates if c[0] <= end]
    return paths


def _examples(
    solution: SolutionData, policy: LabelPolicy
) -> Iterator[tuple[list[str], list[bool]]]:
    """(step texts, labels) of every training example the solution gives."""
    for path in labelled_paths(solution, policy):
        n = len(path.labels)
        if n:
            yield solution.steps[:n], path.labels
        for position, text, value in path.candidates:
            yield [*solution.steps[:position], text], [*path.labels[:position], value]


# --------------------------------------------------------------------------------------------
# Rows of each format: each yields (row, labels to count)


def _utc_naive_iso(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    if timezone.is_aware(dt):
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return dt.isoformat(timespec="microseconds")


def prm800k_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """One PRM800K label line per assignment, rebuilt field for field (see labeling.models).

    The question's shape follows the phase, as PRM800K's does: a phase 1 question (the labeler
    built the path) holds the problem and its answer only; a phase 2 one also the reference
    solution and the pre-generated steps, answer and verifier score.
    """
    question: dict[str, Any] = {
        "problem": solution.problem_text,
        "ground_truth_answer": solution.ground_truth_answer,
    }
    if solution.pre_generated:
        question["ground_truth_solution"] = solution.ground_truth_solution
        question["pre_generated_steps"] = solution.steps
        question["pre_generated_answer"] = solution.answer
        question["pre_generated_verifier_score"] = solution.verifier_score
    for a in solution.assignments:
        steps = [
            {
                "completions": lab.completions(solution.steps[lab.index]),
                "human_completion": lab.human_completion,
                "chosen_completion": lab.chosen_completion,
            }
            for lab in a.labels
        ]
        record = {
            "labeler": a.annotator,
            "timestamp": _utc_naive_iso(a.submitted_at),
            "generation": solution.generation,
            "is_quality_control_question": solution.kind == Solution.Kind.QUALITY_CONTROL,
            "is_initial_screening_question": solution.kind == Solution.Kind.SCREENING,
            "question": question,
            "label": {
                "steps": steps,
                "total_time": a.total_time_ms,
                "finish_reason": a.finish_reason or None,
            },
        }
        yield record, [lab.rating for lab in a.labels]


def trl_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """TRL stepwise supervision: the problem as prompt, the steps, one bool per step."""
    for texts, labels in _examples(solution, policy):
        yield {"prompt": solution.problem_text, "completions": texts, "labels": labels}, labels


def math_shepherd_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """Math-Shepherd / OpenRLHF: steps numbered and tagged in one string, ``+``/``-`` labels.

    The tag must be a single token for the trainer; any copy of it inside a step's text is
    removed, or the trainer would read a label where there is none.
    """
    tag = options.get("step_tag", DEFAULT_STEP_TAG)
    for texts, labels in _examples(solution, policy):
        body = "\n".join(
            f"Step {k}: {text.replace(tag, '')} {tag}" for k, text in enumerate(texts, 1)
        )
        marks = ["+" if v else "-" for v in labels]
        yield {"input": f"{solution.problem_text} {body}", "label": marks}, labels


def processbench_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """ProcessBench: the whole solution and the index of its first error, or -1 if none.

    -1 needs every step labelled non-negative; a path that stops early without an error says
    nothing about the rest and gives no record. Negative candidates give a record each: the path
    before them plus the bad step, with the error at its end (the way ProcessBench-style
    evaluations use PRM800K); positive candidates are not whole solutions and give none.
    """
    n_steps = len(solution.steps)
    base = f"{solution.id}"
    for path in labelled_paths(solution, policy):
        suffix = f"-{path.annotator}" if path.annotator and policy.annotators == "each" else ""
        if False in path.labels:
            first = path.labels.index(False)
        elif len(path.labels) == n_steps:
            first = -1
        else:
            first = None
        if first is not None:
            counted = [True] * n_steps if first < 0 else [True] * first + [False]
            counted += [None] * (n_steps - len(counted))
            yield (
                {
                    "id": base + suffix,
                    "generator": solution.generator,
                    "problem": solution.problem_text,
                    "steps": solution.steps,
                    "final_answer_correct": solution.answer_is_correct,
                    "label": first,
                },
                counted,
            )
        for k, (position, text, value) in enumerate(path.candidates):
            if value or not all(path.labels[:position]):
                continue
            yield (
                {
                    "id": f"{base}{suffix}-alt{k}",
                    "generator": solution.generator,
                    "problem": solution.problem_text,
                    "steps": [*solution.steps[:position], text],
                    "final_answer_correct": None,
                    "label": position,
                },
                [True] * position + [False],
            )


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
]


def csv_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """One row per step label of every exported assignment, ratings as given (-1/0/1)."""
    campaign = options["campaign_slug"]
    for a in solution.assignments:
        submitted = _utc_naive_iso(a.submitted_at)
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
                ],
                (lab.rating,),
            )


# --------------------------------------------------------------------------------------------
# Writers


class JsonlWriter:
    def __init__(self, path: Path, fmt: Format) -> None:
        self._f = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        self._dumps = json.JSONEncoder(ensure_ascii=False).encode

    def write(self, row: dict) -> None:
        self._f.write(self._dumps(row))
        self._f.write("\n")

    def close(self) -> None:
        self._f.close()


class CsvWriter:
    def __init__(self, path: Path, fmt: Format) -> None:
        self._f = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self._w = csv.writer(self._f)
        self._w.writerow(CSV_COLUMNS)
        self.write = self._w.writerow

    def close(self) -> None:
        self._f.close()


class ParquetWriter:
    """Buffers rows into record batches; one row group per ``rows_per_group`` rows."""

    rows_per_group = 5000

    def __init__(self, path: Path, fmt: Format) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        self._schema = pa.schema(
            [
                ("prompt", pa.string()),
                ("completions", pa.list_(pa.string())),
                ("labels", pa.list_(pa.bool_())),
            ]
        )
        self._writer = pq.ParquetWriter(path, self._schema, compression="zstd")
        self._buffer: dict[str, list] = {name: [] for name in self._schema.names}

    def write(self, row: dict) -> None:
        for name, column in self._buffer.items():
            column.append(row[name])
        if len(self._buffer["prompt"]) >= self.rows_per_group:
            self._flush()

    def _flush(self) -> None:
        if self._buffer["prompt"]:
            batch = self._pa.RecordBatch.from_pydict(self._buffer, schema=self._schema)
            self._writer.write_batch(batch)
            self._buffer = {name: [] for name in self._schema.names}

    def close(self) -> None:
        self._flush()
        self._writer.close()


# --------------------------------------------------------------------------------------------
# The formats and the export itself

RAW_OPTIONS = (
    "include_quality_control",
    "include_screening",
    "reviewed_only",
    "test_fraction",
    "split_seed",
    "math500",
)
ALL_OPTIONS = tuple(f.name for f in dataclasses.fields(LabelPolicy))
BINARY_NAMES = {True: "positive", False: "negative", None: "unlabelled"}
RAW_NAMES = {1: "positive", 0: "neutral", -1: "negative", None: "unrated"}
DEFAULT_STEP_TAG = "ки"


@dataclass(frozen=True)
class Format:
    name: str
    extension: str
    writer: type
    rows: Callable[[SolutionData, LabelPolicy, dict], Iterator[tuple[Any, Iterable]]]
    applies: tuple[str, ...]
    rating_names: dict
    options: dict[str, Any] = field(default_factory=dict)
    description: str = ""


FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        Format(
            "prm800k",
            ".jsonl",
            JsonlWriter,
            prm800k_rows,
            RAW_OPTIONS,
            RAW_NAMES,
            description="PRM800K raw label lines (JSONL)",
        ),
        Format(
            "trl",
            ".jsonl",
            JsonlWriter,
            trl_rows,
            ALL_OPTIONS,
            BINARY_NAMES,
            description="TRL stepwise supervision (JSONL)",
        ),
        Format(
            "trl-parquet",
            ".parquet",
            ParquetWriter,
            trl_rows,
            ALL_OPTIONS,
            BINARY_NAMES,
            description="TRL stepwise supervision (Parquet)",
        ),
        Format(
            "processbench",
            ".jsonl",
            JsonlWriter,
            processbench_rows,
            tuple(o for o in ALL_OPTIONS if o != "cut_after_first_negative"),
            BINARY_NAMES,
            description="ProcessBench (JSONL, label = first wrong step or -1)",
        ),
        Format(
            "math-shepherd",
            ".jsonl",
            JsonlWriter,
            math_shepherd_rows,
            ALL_OPTIONS,
            BINARY_NAMES,
            options={"step_tag": DEFAULT_STEP_TAG},
            description="Math-Shepherd / OpenRLHF (JSONL, step tag and +/-)",
        ),
        Format(
            "csv",
            ".csv",
            CsvWriter,
            csv_rows,
            RAW_OPTIONS,
            RAW_NAMES,
            description="One row per step label (CSV)",
        ),
    ]
}


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise ExportError(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}") from None


def format_options(fmt: Format, options: dict[str, Any] | None) -> dict[str, Any]:
    """The format's options with defaults filled in; unknown or empty ones are refused."""
    options = dict(options or {})
    unknown = set(options) - set(fmt.options)
    if unknown:
        raise ExportError(f"{fmt.name} has no options {', '.join(sorted(unknown))}")
    merged = {**fmt.options, **options}
    if "step_tag" in merged and not str(merged["step_tag"]).strip():
        raise ExportError("step_tag must not be blank")
    return merged


def output_paths(out: Path, fmt: Format, splits: tuple[str, ...]) -> tuple[dict[str, Path], Path]:
    """The data file of each split and the manifest, beside ``out``.

    ``data.jsonl`` stays as it is for a single split, becomes ``data.train.jsonl`` and
    ``data.test.jsonl`` for two, and the manifest is ``data.manifest.json``.
    """
    out = Path(out)
    if not out.suffix:
        out = out.with_name(out.name + fmt.extension)
    stem, suffix = out.name[: -len(out.suffix)], out.suffix
    if splits == ("all",):
        files = {"all": out}
    else:
        files = {s: out.with_name(f"{stem}.{s}{suffix}") for s in splits}
    return files, out.with_name(f"{stem}.manifest.json")


@dataclass
class _Tally:
    records: int = 0
    problems: int = 0
    solutions: int = 0
    steps: int = 0
    ratings: Counter = field(default_factory=Counter)
    last_problem: int | None = None
    last_solution: int | None = None

    def as_dict(self, names: dict) -> dict[str, Any]:
        ratings = dict.fromkeys(names.values(), 0)
        for value, n in self.ratings.items():
            ratings[names[value]] += n
        return {
            "records": self.records,
            "problems": self.problems,
            "solutions": self.solutions,
            "steps": self.steps,
            "ratings": ratings,
        }


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_export(
    *,
    campaign: Campaign,
    fmt: str,
    out: Path,
    policy: LabelPolicy | None = None,
    options: dict[str, Any] | None = None,
    progress: Progress | None = None,
    batch_size: int = 2000,
) -> dict[str, Any]:
    """Write the campaign's labels as ``fmt`` to ``out`` (one file per split) and a manifest.

    Returns the manifest, which is also written beside the files. Counts are of what was
    written: records (lines or rows), distinct problems and solutions, steps (labels in the
    records, a prefix counted again in each alternative example) and labels by value.
    """
    policy = policy or LabelPolicy()
    spec = get_format(fmt)
    opts = format_options(spec, options)
    files, manifest_path = output_paths(Path(out), spec, policy.splits)
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    row_options = {**opts, "campaign_slug": campaign.slug}

    stats = StreamStats()
    tallies = {split: _Tally() for split in files}
    writers = {split: spec.writer(path, spec) for split, path in files.items()}
    try:
        for solution in iter_solutions(
            campaign=campaign, policy=policy, batch_size=batch_size, progress=progress, stats=stats
        ):
            writer = writers[solution.split]
            tally = tallies[solution.split]
            for row, labels in spec.rows(solution, policy, row_options):
                writer.write(row)
                tally.records += 1
                tally.steps += len(labels)
                tally.ratings.update(labels)
                if tally.last_solution != solution.id:
                    tally.last_solution = solution.id
                    tally.solutions += 1
                    if tally.last_problem != solution.problem_id:
                        tally.last_problem = solution.problem_id
                        tally.problems += 1
    finally:
        for w in writers.values():
            w.close()

    counts = {split: t.as_dict(spec.rating_names) for split, t in tallies.items()}
    manifest = {
        "format": spec.name,
        "description": spec.description,
        "format_options": opts,
        "policy": policy.to_dict(),
        "policy_applies": list(spec.applies),
        "campaign": {"id": campaign.pk, "slug": campaign.slug, "name": campaign.name},
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
                "name": path.name,
                "split": split,
                "records": tallies[split].records,
                "bytes": path.stat().st_size,
                "sha256": sha256_file(path),
            }
            for split, path in files.items()
        ],
        "manifest_name": manifest_path.name,
    }
    with open(manifest_path, "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=2)
        f.write("\n")
    return manifest

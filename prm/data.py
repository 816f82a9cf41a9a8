"""Reading PRM training data: `trl` exports (JSONL or Parquet) and raw PRM800K label lines.

Everything becomes a list of :class:`Solution` (one problem, its ordered steps and a bool label per
step), the shape of one row of TRL's stepwise supervision. The default label policy (neutral counts
as positive, a path is cut after its first negative step, and each rated alternative completion
becomes its own row: the chosen prefix plus that candidate) is applied to PRM800K lines here, so a
raw PRM800K file and the app's `trl` export of the same labels give the same rows.

Splits are by a hash of the problem text, so the rows of one problem never straddle train and test,
and the same problem lands in the same split whatever file it comes from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SPLITS = ("train", "validation", "test")
# Share of problems (by hash bucket out of 100) in train / validation; the rest is test.
TRAIN_BUCKETS = 80
VALIDATION_BUCKETS = 10

DEFAULT_LABEL_POLICY = {
    "neutral": "positive",
    "cut_at_first_negative": True,
    "alternatives": "own_row",
    "human_completion": "positive",
}


@dataclass(frozen=True)
class Solution:
    """One solution path: a problem, its steps, and P(correct) targets per step when labelled.

    ``answer_correct`` is the final answer's correctness when the source knows it (best-of-N).
    """

    problem: str
    steps: tuple[str, ...]
    labels: tuple[bool, ...] | None = None
    answer: str | None = None
    answer_correct: bool | None = None

    def __post_init__(self) -> None:
        if self.labels is not None and len(self.labels) != len(self.steps):
            raise ValueError(
                f"{len(self.steps)} steps but {len(self.labels)} labels for problem "
                f"{self.problem[:60]!r}"
            )

    @property
    def first_error(self) -> int:
        """Index of the first negative step, -1 when every step is non-negative (ProcessBench)."""
        if self.labels is None:
            raise ValueError("unlabelled solution")
        for i, ok in enumerate(self.labels):
            if not ok:
                return i
        return -1


@dataclass(frozen=True)
class StepExample:
    """One step with its context: what the step-level backbones score."""

    problem: str
    previous: tuple[str, ...]
    step: str
    label: bool | None = None


@dataclass
class Dataset:
    """Solutions read from one file, with where they came from (for the checkpoint's manifest)."""

    solutions: list[Solution]
    source: dict[str, Any] = field(default_factory=dict)

    def split(self, name: str) -> list[Solution]:
        return [s for s in self.solutions if split_of(s.problem) == name]


def split_of(problem: str) -> str:
    """The split a problem belongs to, from a hash of its text (stable across files and runs)."""
    bucket = int.from_bytes(hashlib.sha256(problem.encode("utf-8")).digest()[:8], "big") % 100
    if bucket < TRAIN_BUCKETS:
        return "train"
    if bucket < TRAIN_BUCKETS + VALIDATION_BUCKETS:
        return "validation"
    return "test"


def step_examples(solutions: Iterable[Solution], *, dedupe: bool = True) -> list[StepExample]:
    """Every step of every solution with its context.

    Rows of one problem repeat their shared prefix (each alternative row carries the chosen path up
    to it); with ``dedupe`` each (problem, prefix, step) counts once, so prefix steps do not weigh
    as many times as there were alternatives after them. The first label seen wins.
    """
    seen: set[tuple[str, tuple[str, ...]]] = set()
    out: list[StepExample] = []
    for sol in solutions:
        for i, step in enumerate(sol.steps):
            key = (sol.problem, sol.steps[: i + 1])
            if dedupe:
                if key in seen:
                    continue
                seen.add(key)
            label = None if sol.labels is None else sol.labels[i]
            out.append(StepExample(sol.problem, sol.steps[:i], step, label))
    return out


def unique_steps(
    rows: Sequence[Solution], values: Sequence[Sequence[float] | np.ndarray]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per-step ``values`` of ``rows`` for each distinct (problem, prefix) once, with the step's
    label and problem: the population that step metrics and calibration are about (a shared
    prefix repeated in every alternative row would otherwise count many times)."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    out, labels, groups = [], [], []
    for s, v in zip(rows, values, strict=True):
        for i in range(len(s.steps)):
            key = (s.problem, s.steps[: i + 1])
            if key in seen:
                continue
            seen.add(key)
            out.append(v[i])
            assert s.labels is not None, "unique_steps reads labelled rows"
            labels.append(bool(s.labels[i]))
            groups.append(s.problem)
    return np.asarray(out, dtype=np.float64), np.asarray(labels, dtype=bool), groups


# -- reading files ---------------------------------------------------------------------------------


def read_dataset(path: str | Path) -> Dataset:
    """Read a `trl` export (JSONL or Parquet) or a PRM800K JSONL file, detected from its rows."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such data file: {path}")
    if path.suffix == ".parquet":
        rows: Iterable[dict[str, Any]] = _parquet_rows(path)
    else:
        rows = _jsonl_rows(path)
    solutions = list(solutions_from_rows(rows))
    if not solutions:
        raise ValueError(f"{path}: no solutions found")
    return Dataset(solutions, source=data_source(path))


def solutions_from_rows(rows: Iterable[dict[str, Any]]) -> Iterator[Solution]:
    """Rows of either format to solutions; PRM800K lines go through the default label policy."""
    for n, row in enumerate(rows, 1):
        if "prompt" in row and "completions" in row:
            yield _solution_from_trl(row, n)
        elif "question" in row and "label" in row:
            yield from prm800k_solutions(row)
        else:
            raise ValueError(
                f"row {n}: neither a `trl` row (prompt, completions, labels) "
                "nor a PRM800K line (question, label)"
            )


def _solution_from_trl(row: dict[str, Any], n: int) -> Solution:
    completions = row["completions"]
    labels = row.get("labels")
    if not isinstance(completions, list) or not all(isinstance(c, str) for c in completions):
        raise ValueError(f"row {n}: `completions` must be a list of strings")
    if labels is not None:
        labels = tuple(bool(x) for x in labels)
    correct = row.get("answer_correct", row.get("is_correct"))
    return Solution(
        problem=str(row["prompt"]),
        steps=tuple(completions),
        labels=labels,
        answer=row.get("answer"),
        answer_correct=None if correct is None else bool(correct),
    )


def prm800k_solutions(line: dict[str, Any]) -> list[Solution]:
    """A PRM800K label line as `trl` rows under the default label policy.

    The labeler's path takes at each position the chosen completion, else the human completion
    (a human-written step: positive), else the first candidate, as ``labeling.models`` stores it.
    The path is cut after its first negative step. Every other rated candidate at a position the
    path reached becomes its own row: the path's prefix plus that candidate. Unrated candidates
    carry no label and are skipped. A path that stops on an unrated step ends before it.
    """
    question = line["question"]
    problem = question["problem"]
    steps = (line.get("label") or {}).get("steps") or []
    path: list[str] = []
    path_labels: list[bool] = []
    last: dict[str, Any] | None = None  # the completion the path ends on, for its final answer
    rows: list[Solution] = []
    for step in steps:
        completions = step.get("completions") or []
        chosen = step.get("chosen_completion")
        human = step.get("human_completion")
        if isinstance(human, dict):
            human = human.get("text")
        if chosen is not None:
            own: int | None = chosen
        elif human is not None:
            own = None
        elif completions:
            own = 0
        else:
            break
        for j, comp in enumerate(completions):
            if j == own or comp.get("rating") is None:
                continue
            rows.append(
                Solution(
                    problem=problem,
                    steps=(*path, comp["text"]),
                    labels=(*path_labels, comp["rating"] >= 0),
                    **_graded_answer(comp, question),
                )
            )
        own_completion = None if own is None else completions[own]
        if own_completion is None:
            text, rating = human, 1
        else:
            text, rating = own_completion["text"], own_completion.get("rating")
        if rating is None:
            break
        path.append(text)
        path_labels.append(rating >= 0)
        last = own_completion
        if rating < 0:
            break
    if path:
        rows.insert(
            0, Solution(problem, tuple(path), tuple(path_labels), **_graded_answer(last, question))
        )
    return rows


def _graded_answer(completion: dict[str, Any] | None, question: dict[str, Any]) -> dict[str, Any]:
    """Final answer and its correctness for a completion that states one (phase 1 marks them)."""
    if (
        not completion
        or completion.get("answer") is None
        or not question.get("ground_truth_answer")
    ):
        return {}
    answer = str(completion["answer"])
    return {
        "answer": answer,
        "answer_correct": _same_answer(answer, question["ground_truth_answer"]),
    }


def _same_answer(a: str, b: str) -> bool:
    """Cheap normalised comparison; the app grades with math-verify, which is too slow to import."""

    def norm(s: str) -> str:
        s = s.strip().strip("$").replace("\\!", "").replace(" ", "").replace("\\dfrac", "\\frac")
        return s.rstrip(".").removeprefix("\\boxed{").removesuffix("}") if "boxed" in s else s

    return norm(a) == norm(b)


def _jsonl_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not JSON: {exc}") from exc


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches():
        yield from batch.to_pylist()


# -- provenance ------------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def data_source(path: Path) -> dict[str, Any]:
    """What a checkpoint records about its training data: the file's sha256 and, when the exporter
    wrote a manifest beside it, the manifest's sha256 and label policy."""
    source: dict[str, Any] = {"path": str(path), "sha256": sha256_file(path)}
    for candidate in (
        path.with_name(path.name + ".manifest.json"),
        path.with_suffix(".manifest.json"),
        path.with_name("manifest.json"),
    ):
        if candidate.is_file():
            source["manifest"] = str(candidate)
            source["manifest_sha256"] = sha256_file(candidate)
            try:
                manifest = json.loads(candidate.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                break
            policy = manifest.get("label_policy", manifest.get("policy"))
            if policy is not None:
                source["label_policy"] = policy
            break
    source.setdefault("label_policy", DEFAULT_LABEL_POLICY)
    return source

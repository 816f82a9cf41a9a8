"""What every import format turns a line into, and the small checks the formats share.

A format reads one JSON record and returns :class:`SolutionIn` objects (each with its problem and
any submitted labels), or raises :class:`FieldError` naming the field at fault. Nothing here
touches the database: the same parse runs once to validate the whole file and once to write it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from labeling.models import FinishReason, Problem, Solution

USERNAME_MAX = 150  # django.contrib.auth's username length
RATINGS = (-1, 0, 1)


class FieldError(Exception):
    """A record is wrong at ``field`` (a path such as ``question.pre_generated_steps[3]``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


@lru_cache(maxsize=4096)
def _problem_hash(text: str) -> str:
    """Solutions of one problem come together in a file: hash its text once, not per solution."""
    return Problem.hash_text(text)


@dataclass(slots=True)
class ProblemIn:
    text: str
    ground_truth_answer: str = ""
    ground_truth_solution: str | None = None
    subject: str = ""
    level: str = ""
    unique_id: str = ""

    @property
    def content_hash(self) -> str:
        return _problem_hash(self.text)


@dataclass(slots=True)
class StepLabelIn:
    """One ``label.steps[i]``: see ``labeling.models.StepLabel`` for the meaning of each field."""

    rating: int | None
    flagged: bool | None
    completion_index: int | None
    alternatives: list[dict]
    human_completion: dict | None
    chosen_completion: int | None


@dataclass(slots=True)
class LabelIn:
    """A submitted labelling of a solution (one PRM800K label line)."""

    labeler: str
    submitted_at: datetime | None
    finish_reason: str
    total_time_ms: int | None
    steps: list[StepLabelIn]
    # The labeler's rating of a trajectory's final outcome (AgentProcessBench's ``final_label``).
    outcome: int | None = None

    def submission_key(self, campaign_id: int, solution_hash: str) -> str:
        """Who labelled which solution when, and how: the assignment's identity on re-import.

        Built from the parsed line rather than its bytes, so the same submission written with
        other spacing or key order is still recognised.
        """
        when = None if self.submitted_at is None else self.submitted_at.isoformat()
        ratings = [
            (s.rating, s.flagged, s.completion_index, s.chosen_completion, len(s.alternatives))
            for s in self.steps
        ]
        what = [campaign_id, self.labeler, when, solution_hash, self.finish_reason]
        # The outcome joins the key only where one is given: math labels keep their keys.
        outcome = [] if self.outcome is None else [self.outcome]
        blob = json.dumps([*what, self.total_time_ms, ratings, *outcome])
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(slots=True)
class SolutionIn:
    problem: ProblemIn
    steps: list[str]
    answer: str | None = None
    generator: str = ""
    generation: int | None = None
    kind: str = Solution.Kind.REGULAR
    pre_generated: bool = True
    verifier_score: float | None = None
    source_ref: str = ""
    # Where the source gives the solution its own id (``source_ref``), the field's path: an id
    # is unique in a file. Empty when ``source_ref`` is derived (a generator's name, a position).
    id_field: str = ""
    gold: list[int | None] | None = None
    # Correctness stated by the source when it has no ground truth to grade against.
    answer_is_correct: bool | None = None
    labels: list[LabelIn] = field(default_factory=list)
    # Each step as the source wrote it, where the splitter changed it (``Step.raw_text``).
    raw_steps: list[str] | None = None
    # A generated sample's identity (``Solution.source_ref``): the import skips one it has.
    key: str = ""
    # An agent trajectory's conversation (``Solution.trace``) and each step's structure
    # (``Step.content``, one per step); None for math.
    trace: dict | None = None
    contents: list[dict] | None = None
    # A line that brings its problem only (no solutions yet: generation asks for them later):
    # the problem is written, no solution (``steps`` is empty).
    problem_only: bool = False

    @property
    def content_hash(self) -> str:
        return Solution.hash_content(self.problem.text, self.steps, self.answer, self.trace)


# --- field checks: each returns the value or raises FieldError ---------------------------------

_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list"}


def need(obj: dict, key: str, path: str) -> Any:
    if key not in obj:
        raise FieldError(path, "missing field")
    return obj[key]


def as_dict(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise FieldError(path, "must be an object")
    return value


def as_list(value: Any, path: str, *, nonempty: bool = False) -> list:
    if not isinstance(value, list):
        raise FieldError(path, "must be a list")
    if nonempty and not value:
        raise FieldError(path, "must not be empty")
    return value


def as_str(value: Any, path: str, *, null: bool = False, nonempty: bool = False) -> str | None:
    if value is None and null:
        return None
    if not isinstance(value, str):
        raise FieldError(path, "must be a string" + (" or null" if null else ""))
    if nonempty and not value.strip():
        raise FieldError(path, "must not be empty")
    return value


INT_MAX = 2**31 - 1  # the database's integer columns


def as_int(value: Any, path: str, *, null: bool = False, minimum: int | None = None) -> int | None:
    if value is None and null:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(path, "must be an integer" + (" or null" if null else ""))
    if minimum is not None and value < minimum:
        raise FieldError(path, f"must be at least {minimum}")
    if abs(value) > INT_MAX:
        raise FieldError(path, f"must be at most {INT_MAX}")
    return value


def as_float(value: Any, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldError(path, "must be a number or null")
    try:
        number = float(value)
    except OverflowError:
        raise FieldError(path, "is too large for a number") from None
    if not math.isfinite(number):
        raise FieldError(path, f"{number} is not a number (NaN and infinities are refused)")
    return number


def as_bool(value: Any, path: str, *, null: bool = False) -> bool | None:
    if value is None and null:
        return None
    if not isinstance(value, bool):
        raise FieldError(path, "must be true or false" + (" or null" if null else ""))
    return value


def as_rating(value: Any, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or value not in RATINGS:
        raise FieldError(path, f"must be -1, 0, 1 or null, not {json.dumps(value)}")
    return int(value)


def as_steps(value: Any, path: str) -> list[str]:
    """A non-empty list of non-empty strings."""
    steps = as_list(value, path, nonempty=True)
    for i, text in enumerate(steps):
        as_str(text, f"{path}[{i}]", nonempty=True)
    return steps


def shown_steps(steps: list[str]) -> tuple[list[str], list[str] | None]:
    """Steps given as a list, as annotators see them, and as the source wrote them (None when
    the same): GSM8K's calculator notes (``<<60-20=40>>``) are the model's, not the reader's, in
    every format that may carry them, as when the splitter cuts a text."""
    from .splitting import strip_annotations

    shown = [strip_annotations(s).strip() or s for s in steps]
    return shown, (steps if shown != steps else None)


def as_labeler(value: Any, path: str) -> str:
    labeler = as_str(value, path, nonempty=True)
    if len(labeler) > USERNAME_MAX:
        raise FieldError(path, f"longer than {USERNAME_MAX} characters")
    return labeler


def as_finish_reason(value: Any, path: str) -> str:
    if value is None:
        return ""
    if value not in FinishReason.values:
        choices = ", ".join(FinishReason.values)
        raise FieldError(path, f"must be one of {choices} or null, not {json.dumps(value)}")
    return value


def as_timestamp(value: Any, path: str) -> datetime | None:
    """PRM800K writes naive UTC ``isoformat()``; an explicit offset is honoured."""
    text = as_str(value, path, null=True)
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise FieldError(path, f"not an ISO 8601 timestamp: {text!r}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def split_text(text: str, mode: str | None, path: str) -> tuple[list[str], list[str] | None]:
    """A solution text as (displayed steps, raw steps or None when none differs)."""
    from .splitting import SplitError, split

    try:
        steps = split(text, mode or "auto")
    except SplitError as e:
        raise FieldError("split", str(e)) from None
    if not steps:
        raise FieldError(path, "must not be empty")
    shown = [s.text for s in steps]
    raws = [s.raw for s in steps]
    return shown, (raws if raws != shown else None)


def level_text(value: Any, path: str) -> str:
    """MATH levels arrive as ``3`` or ``"Level 3"``; both are stored as ``"3"``."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = as_str(value, path)
    return text.removeprefix("Level ").strip()

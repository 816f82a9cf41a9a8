"""Reading an import file, a line at a time: the validation pass and the writing pass's batches.

Neither holds the file in memory. ``validate`` parses every line with the format's parser and
collects up to ``MAX_ERRORS`` errors, each naming file, line, field and problem; ``batches``
parses it again for the writer, ``BATCH`` solutions at a time. Both report progress to a terminal
bar or to a callable (the web upload's job).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

from django.conf import settings

from common.jsoncheck import MAX_DEPTH, json_unfit

from .records import FieldError, SolutionIn
from .result import ImportValidationError, LineError

Parser = Callable[[dict, dict], list[SolutionIn]]

MAX_ERRORS = 20
BATCH = 1000  # solutions per write batch


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every non-blank line."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if raw.strip():
                yield number, raw


def _bar(path: Path, progress, desc: str):
    if not progress:
        return None
    if callable(progress):
        return _Progress(progress, "writing" if desc == "importing" else desc, path.stat().st_size)
    from tqdm import tqdm

    return tqdm(total=path.stat().st_size, desc=desc, unit="B", unit_scale=True, leave=False)


class _Progress:
    """A progress bar's ``update``/``close`` that report to a callable, at most every 1%."""

    def __init__(self, report: Callable[[str, float], None], phase: str, total: int) -> None:
        self.report, self.phase, self.total = report, phase, max(total, 1)
        self.done = self.reported = 0
        report(phase, 0.0)

    def update(self, n: int) -> None:
        self.done += n
        if self.done - self.reported >= self.total / 100:
            self.reported = self.done
            self.report(self.phase, min(self.done / self.total, 1.0))

    def close(self) -> None:
        self.report(self.phase, 1.0)


def parse_line(raw: bytes, parse: Parser, options: dict) -> list[SolutionIn]:
    try:
        record = json.loads(raw)
    except RecursionError:
        raise FieldError("", f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as e:
        raise FieldError("", f"not valid JSON ({e})") from None
    if not isinstance(record, dict):
        raise FieldError("", "must be a JSON object")
    if (unfit := json_unfit(record)) is not None:
        raise FieldError(*unfit)
    solutions = parse(record, options)
    _check_limits(solutions)
    return solutions


def _check_limits(solutions: list[SolutionIn]) -> None:
    """The bounds on imported text (settings; defaults no real dataset meets), each named."""
    max_steps = settings.STEPWISE_IMPORT_MAX_STEPS
    max_step = settings.STEPWISE_IMPORT_MAX_STEP_CHARS
    max_answer = settings.STEPWISE_IMPORT_MAX_ANSWER_CHARS
    for k, s in enumerate(solutions):
        where = "" if len(solutions) == 1 else f"solutions[{k}]."
        if len(s.steps) > max_steps:
            raise FieldError(
                f"{where}steps",
                f"{len(s.steps):,} steps; a solution has at most {max_steps:,} "
                "(STEPWISE_IMPORT_MAX_STEPS)",
            )
        for j, text in enumerate(s.steps):
            if len(text) > max_step:
                raise FieldError(
                    f"{where}steps[{j}]",
                    f"{len(text):,} characters; a step has at most {max_step:,} "
                    "(STEPWISE_IMPORT_MAX_STEP_CHARS)",
                )
        for name, answer in (
            ("answer", s.answer),
            ("ground_truth_answer", s.problem.ground_truth_answer),
        ):
            if answer is not None and len(answer) > max_answer:
                raise FieldError(
                    name if name == "ground_truth_answer" else f"{where}{name}",
                    f"{len(answer):,} characters; an answer has at most {max_answer:,} "
                    "(STEPWISE_IMPORT_MAX_ANSWER_CHARS)",
                )


def validate(path: Path, parse: Parser, options: dict, progress) -> set[str]:
    """Check every line; returns the labelers named. Raises ImportValidationError."""
    errors: list[LineError] = []
    labelers: set[str] = set()
    truths: dict[str, tuple[str, int]] = {}  # problem hash -> (ground truth, line)
    unique_ids: dict[str, tuple[str, int]] = {}  # problem unique_id -> (problem hash, line)
    solution_ids: dict[str, tuple] = {}  # a solution's own id -> (line, which solution)
    count = 0
    bar = _bar(path, progress, "validating")
    for number, raw in _lines(path):
        count += 1
        if bar is not None:
            bar.update(len(raw))
        try:
            solutions = parse_line(raw, parse, options)
        except FieldError as e:
            errors.append(LineError(path.name, number, e.field, e.message))
        else:
            for s in solutions:
                labelers.update(label.labeler for label in s.labels)
                truth = s.problem.ground_truth_answer
                seen = truths.setdefault(s.problem.content_hash, (truth, number))
                if truth and seen[0] and truth != seen[0]:
                    message = (
                        f"{truth!r} differs from {seen[0]!r} on line {seen[1]} for this problem"
                    )
                    errors.append(LineError(path.name, number, "ground_truth_answer", message))
                    break
                if truth and not seen[0]:
                    truths[s.problem.content_hash] = (truth, number)
                if (error := duplicate_id(s, number, unique_ids, solution_ids)) is not None:
                    errors.append(LineError(path.name, number, *error))
                    break
        if len(errors) >= MAX_ERRORS:
            break
    if bar is not None:
        bar.close()
    if not count and not errors:
        errors.append(LineError(path.name, None, "", "the file holds no records"))
    if errors:
        raise ImportValidationError(errors, truncated=len(errors) >= MAX_ERRORS)
    return labelers


def duplicate_id(
    s: SolutionIn, number: int, unique_ids: dict, solution_ids: dict
) -> tuple[str, str] | None:
    """(field, message) when an id the source gives is used twice in one file: a problem's
    ``unique_id`` on two different problems, or a solution's own id on two solutions. The
    import refuses such a file; its preview says so too (``imports.services.import_preview``)."""
    uid = s.problem.unique_id
    if uid:
        first = unique_ids.setdefault(uid, (s.problem.content_hash, number))
        if first[0] != s.problem.content_hash:
            return (
                "unique_id",
                f"{uid!r} is already the unique_id of another problem (line {first[1]})",
            )
    if s.id_field:
        first = solution_ids.setdefault(s.source_ref, (number, id(s)))
        if first != (number, id(s)):
            message = f"{s.source_ref!r} is already the id of a solution (line {first[0]})"
            return s.id_field, message
    return None


def batches(
    path: Path, parse: Parser, options: dict, progress
) -> Iterator[list[tuple[int, SolutionIn]]]:
    bar = _bar(path, progress, "importing")
    items: list[tuple[int, SolutionIn]] = []
    for number, raw in _lines(path):
        try:
            items.extend((number, s) for s in parse_line(raw, parse, options))
        except FieldError as e:  # the file changed since it was validated
            error = LineError(path.name, number, e.field, e.message)
            raise ImportValidationError([error]) from None
        if bar is not None:
            bar.update(len(raw))
        if len(items) >= BATCH:
            yield items
            items = []
    if items:
        yield items
    if bar is not None:
        bar.close()

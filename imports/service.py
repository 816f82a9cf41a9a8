"""``import_file``: validate a whole file, then write it in one transaction, then grade.

Two streaming passes over the file, never holding it in memory:

1. **validate**: parse every line with the format's parser; collect up to ``MAX_ERRORS`` errors,
   each naming file, line, field and problem. Any error: nothing is written.
2. **write**: parse again (in a thread, ahead of the writer) and write in batches inside one
   transaction (``rows.Table``: COPY on PostgreSQL). Problems and solutions are deduplicated by
   their content hashes, submitted labels by a submission key (campaign, labeler, timestamp,
   solution, ratings), so importing a file twice writes nothing the second time.

New solutions are written with their queue slots already counted; older solutions that received
labels are recounted with ``refresh_queue_state``. Then the new solutions' answers are graded
(after the commit: grading is slow and needs no lock).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import connection, transaction
from django.utils import timezone

from common.readahead import read_ahead
from labeling.grading import GradingResult, solutions_grade
from labeling.models import Assignment, Campaign, Membership, Problem, Solution, Step, StepLabel

from .jsonl import parse_jsonl
from .prm800k import parse_prm800k, parse_trajectories
from .processbench import parse_processbench
from .records import FieldError, LabelIn, SolutionIn
from .rows import Ids, Table
from .splitting import SplitError, check_mode

Parser = Callable[[dict, dict], list[SolutionIn]]

FORMATS: dict[str, Parser] = {
    "prm800k": parse_prm800k,
    "prm800k-trajectories": parse_trajectories,
    "processbench": parse_processbench,
    "jsonl": parse_jsonl,
}
OPTIONS = {"as_gold", "generator", "labeler", "split"}
MAX_ERRORS = 20
BATCH = 1000  # solutions per write batch
CHUNK = 5000  # values per IN (...) list: SQLite takes at most 32,766 parameters


@dataclass(frozen=True)
class LineError:
    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return ": ".join(p for p in (where, self.field, self.message) if p)


class ImportValidationError(Exception):
    """The file cannot be imported; ``errors`` says where and why. Nothing was written."""

    def __init__(self, errors: list[LineError], *, truncated: bool = False) -> None:
        self.errors = errors
        self.truncated = truncated
        text = "\n".join(str(e) for e in errors)
        if truncated:
            text += f"\n(stopped after {len(errors)} errors)"
        super().__init__(text)


@dataclass
class ImportResult:
    lines: int = 0
    problems_created: int = 0
    solutions_created: int = 0
    solutions_existing: int = 0  # already in the campaign before this import
    steps_created: int = 0
    assignments_created: int = 0
    assignments_existing: int = 0  # label lines imported before (or twice in the file)
    step_labels_created: int = 0
    users_created: int = 0
    solutions_graded: int = 0
    grading: GradingResult | None = field(default=None, repr=False)
    seconds: float = 0.0


def import_file(
    path: Path | str,
    *,
    campaign: Campaign,
    fmt: str,
    grade: bool = True,
    progress: bool | Callable[[str, float], None] = False,
    **options: Any,
) -> ImportResult:
    """Import a file of one of ``FORMATS`` into ``campaign``: all of it, or nothing.

    Options: ``as_gold`` (``qc``/``screening``: ProcessBench labels and JSONL ``gold_ratings``
    become gold step ratings), ``generator`` (default generator name), ``labeler`` (account of
    the trajectories' labels). Raises ImportValidationError on bad input. ``progress``: True
    shows bars on a terminal; a callable is called with the phase (``validating``, ``writing``,
    ``grading``) and the share of the file read in it (the web upload's job records them).
    """
    started = time.monotonic()
    path = Path(path)
    parse = _parser(path, fmt, options)
    labelers = _validate(path, parse, options, progress)
    with transaction.atomic(), _constraints_checked_per_statement():
        writer = _Writer(campaign=campaign, source=fmt, file=path.name)
        writer.add_labelers(labelers)
        for items in read_ahead(
            _batches(path, parse, options, progress), depth=2, name="import-parse"
        ):
            writer.write(items)
        writer.finish()
    result = writer.result
    _analyze_after_bulk_write(result)
    result.seconds = time.monotonic() - started
    if grade and writer.created:
        solutions = Solution.objects.filter(
            campaign=campaign, pk__gte=min(writer.created), pk__lte=max(writer.created)
        )
        if callable(progress):
            progress("grading", 0.0)
        result.grading = solutions_grade(solutions=solutions, progress=progress is True)
        result.solutions_graded = result.grading.graded
    return result


def import_solutions(
    solutions: list[SolutionIn], *, campaign: Campaign, source: str, grade: bool = True
) -> tuple[ImportResult, list[int]]:
    """Write solutions built in memory (generated samples) the way ``import_file`` writes a file.

    One transaction; deduplicated by content and by ``SolutionIn.key`` against what the campaign
    has; graded after the commit. Returns the result and the ids of the solutions created. The
    caller publishes ``labeling.events.solutions_imported``.
    """
    started = time.monotonic()
    with transaction.atomic():
        writer = _Writer(campaign=campaign, source=source, file=source)
        if solutions:
            writer.write(list(enumerate(solutions, 1)))
        writer.finish()
    result = writer.result
    created: list[int] = []
    if writer.created:
        new = Solution.objects.filter(
            campaign=campaign, pk__gte=writer.created[0], pk__lte=writer.created[1]
        )
        created = list(new.values_list("pk", flat=True))
        if grade:
            result.grading = solutions_grade(solutions=new)
            result.solutions_graded = result.grading.graded
    result.seconds = time.monotonic() - started
    return result, created


# Rows after which an import refreshes PostgreSQL's statistics of the tables it wrote.
ANALYZE_AFTER_ROWS = 10_000


def _analyze_after_bulk_write(result: ImportResult) -> None:
    """On PostgreSQL, ANALYZE the tables a large import wrote.

    A bulk COPY leaves the planner's statistics describing the tables as they were until
    autovacuum catches up (or never, where it is off); the queue's claim and the dashboard's
    reads are then planned for tables a fraction of their size. Sampling costs well under a
    second per table, next to an import of this size.
    """
    written = result.solutions_created + result.steps_created + result.step_labels_created
    if connection.vendor != "postgresql" or written < ANALYZE_AFTER_ROWS:
        return
    tables = [m._meta.db_table for m in (Problem, Solution, Step, Assignment, StepLabel)]
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


@contextmanager
def _constraints_checked_per_statement() -> Iterator[None]:
    """On PostgreSQL, check foreign keys as each COPY ends instead of all at commit.

    Django declares them DEFERRABLE INITIALLY DEFERRED, so by default a million step labels
    queue a million checks that run after the last row, while this process sits idle. Checked
    per statement they run while the next batch is being parsed. Restored afterwards, for the
    rest of an enclosing transaction.
    """
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    yield  # on an error the transaction is rolled back, and the setting with it
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def _parser(path: Path, fmt: str, options: dict) -> Parser:
    problems = []
    if fmt not in FORMATS:
        problems.append(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    if unknown := set(options) - OPTIONS:
        problems.append(f"unknown options {sorted(unknown)}")
    if options.get("as_gold") not in (None, *Solution.Kind.values[1:]):
        problems.append(f"as_gold must be qc or screening, not {options['as_gold']!r}")
    if options.get("split") is not None:
        try:
            check_mode(options["split"])
        except SplitError as e:
            problems.append(f"split: {e}")
    if not path.is_file():
        problems.append("no such file")
    if problems:
        raise ImportValidationError([LineError(path.name, None, "", p) for p in problems])
    return FORMATS[fmt]


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


def _parse_line(raw: bytes, parse: Parser, options: dict) -> list[SolutionIn]:
    try:
        record = json.loads(raw)
    except ValueError as e:
        raise FieldError("", f"not valid JSON ({e})") from None
    if not isinstance(record, dict):
        raise FieldError("", "must be a JSON object")
    return parse(record, options)


def _validate(path: Path, parse: Parser, options: dict, progress) -> set[str]:
    """Check every line; returns the labelers named. Raises ImportValidationError."""
    errors: list[LineError] = []
    labelers: set[str] = set()
    truths: dict[str, tuple[str, int]] = {}  # problem hash -> (ground truth, line)
    count = 0
    bar = _bar(path, progress, "validating")
    for number, raw in _lines(path):
        count += 1
        if bar is not None:
            bar.update(len(raw))
        try:
            solutions = _parse_line(raw, parse, options)
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
        if len(errors) >= MAX_ERRORS:
            break
    if bar is not None:
        bar.close()
    if not count and not errors:
        errors.append(LineError(path.name, None, "", "the file holds no records"))
    if errors:
        raise ImportValidationError(errors, truncated=len(errors) >= MAX_ERRORS)
    return labelers


def _batches(
    path: Path, parse: Parser, options: dict, progress
) -> Iterator[list[tuple[int, SolutionIn]]]:
    bar = _bar(path, progress, "importing")
    items: list[tuple[int, SolutionIn]] = []
    for number, raw in _lines(path):
        try:
            items.extend((number, s) for s in _parse_line(raw, parse, options))
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


@dataclass(slots=True)
class _Known:
    """What the writer remembers of a problem: its id, and which of its fields are filled."""

    pk: int
    truth: str
    solution: bool
    subject: bool
    level: bool
    unique_id: bool


class _Writer:
    """Writes parsed solutions batch by batch, remembering what exists (by content hash)."""

    def __init__(self, *, campaign: Campaign, source: str, file: str) -> None:
        self.campaign = campaign
        self.source = source
        self.file = file
        self.result = ImportResult()
        self.problems: dict[str, _Known] = {}
        self.solutions: dict[str, int] = {}
        self.keys: set[str] = set()
        self.users: dict[str, int] = {}
        self.touched: set[int] = set()  # older solutions given new assignments
        self.created: list[int] = []  # [lowest, highest] id of the solutions created
        self.fills: dict[int, dict[str, str]] = {}  # problem id -> blank fields to fill
        self.now = timezone.now()
        # In a campaign without problems (solutions), none can exist but those this import wrote
        # and remembers: the per-batch lookups are skipped. Likewise assignments of solutions.
        self.had_problems = Problem.objects.filter(campaign=campaign).exists()
        self.had_solutions = Solution.objects.filter(campaign=campaign).exists()
        self.problem_rows = Table(
            Problem,
            [
                "id",
                "campaign_id",
                "text",
                "ground_truth_answer",
                "ground_truth_solution",
                "subject",
                "level",
                "unique_id",
                "content_hash",
            ],
        )
        self.solution_rows = Table(
            Solution,
            [
                "id",
                "campaign_id",
                "problem_id",
                "generator",
                "generation",
                "kind",
                "pre_generated",
                "answer",
                "answer_is_correct",
                "verifier_score",
                "source",
                "source_ref",
                "content_hash",
                "assignment_count",
                "is_open",
            ],
        )
        self.step_rows = Table(
            Step, ["id", "solution_id", "index", "text", "raw_text", "gold_rating"]
        )
        self.assignment_rows = Table(
            Assignment,
            [
                "id",
                "campaign_id",
                "solution_id",
                "annotator_id",
                "status",
                "leased_at",
                "submitted_at",
                "finish_reason",
                "total_time_ms",
                "submission_key",
                "source",
            ],
        )
        self.label_rows = Table(
            StepLabel,
            [
                "assignment_id",
                "step_id",
                "rating",
                "flagged",
                "completion_index",
                "alternatives",
                "human_completion",
                "chosen_completion",
            ],
        )
        self.ids = {model: Ids(model) for model in (Problem, Solution, Step, Assignment)}

    def add_labelers(self, labelers: set[str]) -> None:
        """An account (unusable password) and annotator membership for every labeler."""
        if not labelers:
            return
        User = get_user_model()
        names = sorted(labelers)
        for i in range(0, len(names), CHUNK):
            chunk = names[i : i + CHUNK]
            existing = dict(User.objects.filter(username__in=chunk).values_list("username", "pk"))
            new = [
                User(username=n, password=make_password(None)) for n in chunk if n not in existing
            ]
            User.objects.bulk_create(new)
            self.result.users_created += len(new)
            self.users.update(User.objects.filter(username__in=chunk).values_list("username", "pk"))
        members = set(
            Membership.objects.filter(campaign=self.campaign).values_list("user_id", flat=True)
        )
        Membership.objects.bulk_create(
            Membership(user_id=pk, campaign=self.campaign, role=Membership.Role.ANNOTATOR)
            for pk in self.users.values()
            if pk not in members
        )

    def write(self, items: list[tuple[int, SolutionIn]]) -> None:
        hashed = [(n, s, s.problem.content_hash, s.content_hash) for n, s in items]
        self.result.lines = max(self.result.lines, items[-1][0])
        self._problems(hashed)
        labels = self._unseen_labels(hashed)
        new_steps = self._solutions(hashed, Counter(sh for sh, _, _ in labels))
        self._labels(labels, new_steps)

    def _problems(self, hashed: list) -> None:
        unknown = {}
        for _, s, ph, _ in hashed:
            if ph not in self.problems:
                unknown.setdefault(ph, s.problem)
        if unknown and self.had_problems:
            rows = Problem.objects.filter(campaign=self.campaign, content_hash__in=list(unknown))
            for pk, h, truth, solution, subject, level, uid in rows.values_list(
                "pk",
                "content_hash",
                "ground_truth_answer",
                "ground_truth_solution",
                "subject",
                "level",
                "unique_id",
            ):
                self.problems[h] = _Known(
                    pk, truth, solution is not None, bool(subject), bool(level), bool(uid)
                )
        new = [(h, p) for h, p in unknown.items() if h not in self.problems]
        rows = []
        for pk, (h, p) in zip(self.ids[Problem].take(len(new)), new, strict=True):
            rows.append(
                (
                    pk,
                    self.campaign.pk,
                    p.text,
                    p.ground_truth_answer,
                    p.ground_truth_solution,
                    p.subject,
                    p.level,
                    p.unique_id,
                    h,
                )
            )
            self.problems[h] = _Known(
                pk,
                p.ground_truth_answer,
                p.ground_truth_solution is not None,
                bool(p.subject),
                bool(p.level),
                bool(p.unique_id),
            )
        if rows:
            self.result.problems_created += self.problem_rows.insert(rows)
        for number, s, ph, _ in hashed:
            self._merge(self.problems[ph], s.problem, number)

    def _merge(self, known: _Known, p, number: int) -> None:
        """Fill what a problem row lacks from a later line; refuse a different ground truth."""
        if p.ground_truth_answer and known.truth and p.ground_truth_answer != known.truth:
            raise ImportValidationError(
                [
                    LineError(
                        self.file,
                        number,
                        "ground_truth_answer",
                        f"{p.ground_truth_answer!r}, but the campaign has this problem with "
                        f"{known.truth!r}",
                    )
                ]
            )
        fill = {}
        if p.ground_truth_answer and not known.truth:
            fill["ground_truth_answer"] = known.truth = p.ground_truth_answer
        if p.ground_truth_solution is not None and not known.solution:
            fill["ground_truth_solution"], known.solution = p.ground_truth_solution, True
        for name in ("subject", "level", "unique_id"):
            if getattr(p, name) and not getattr(known, name):
                fill[name] = getattr(p, name)
                setattr(known, name, True)
        if fill:
            self.fills.setdefault(known.pk, {}).update(fill)

    def _solutions(self, hashed: list, labels: Counter) -> dict[int, list[int]]:
        """Create the solutions not seen yet, with their steps; returns their step ids.

        ``labels`` counts the labels this batch brings per solution hash: a new solution is
        written with its slots already counted, so that only solutions that existed before
        need ``refresh_queue_state`` (recounting a hundred thousand fresh rows would rewrite each).
        """
        unknown: dict[str, SolutionIn] = {}
        for _, s, _, sh in hashed:
            if sh not in self.solutions:
                unknown.setdefault(sh, s)
        if not unknown:
            return {}
        if self.had_solutions:
            rows = Solution.objects.filter(campaign=self.campaign, content_hash__in=list(unknown))
            for h, pk in rows.values_list("content_hash", "pk"):
                self.solutions[h] = pk
                self.result.solutions_existing += 1
            self._known_keys(unknown)
        new = [(h, s) for h, s in unknown.items() if h not in self.solutions]
        if not new:
            return {}
        step_ids = iter(self.ids[Step].take(sum(len(s.steps) for _, s in new)))
        solution_rows, step_rows, new_steps = [], [], {}
        for pk, (h, s) in zip(self.ids[Solution].take(len(new)), new, strict=True):
            solution_rows.append(
                (
                    pk,
                    self.campaign.pk,
                    self.problems[s.problem.content_hash].pk,  # (a cached hash)
                    s.generator,
                    s.generation,
                    s.kind,
                    s.pre_generated,
                    s.answer,
                    s.answer_is_correct,
                    s.verifier_score,
                    self.source,
                    s.source_ref,
                    h,
                    labels[h],
                    self._is_open(labels[h]),
                )
            )
            ids = new_steps[pk] = [next(step_ids) for _ in s.steps]
            gold = s.gold or [None] * len(ids)
            raws = s.raw_steps or s.steps
            step_rows.extend(
                (sid, pk, i, text, raw if raw != text else "", g)
                for i, (sid, text, raw, g) in enumerate(zip(ids, s.steps, raws, gold, strict=True))
            )
            self.solutions[h] = pk
        self.result.solutions_created += self.solution_rows.insert(solution_rows)
        self.result.steps_created += self.step_rows.insert(step_rows)
        self.created = [min(self.created + list(new_steps)), max(self.created + list(new_steps))]
        return new_steps

    def _known_keys(self, unknown: dict[str, SolutionIn]) -> None:
        """A generated sample whose key (``source_ref``) the campaign has is not written again,
        even when its text differs (a resumed job that sampled it a second time)."""
        keyed = {s.key: h for h, s in unknown.items() if s.key and h not in self.solutions}
        if not keyed:
            return
        rows = Solution.objects.filter(
            campaign=self.campaign, source=self.source, source_ref__in=list(keyed)
        )
        for key, pk in rows.values_list("source_ref", "pk"):
            self.solutions[keyed[key]] = pk
            self.result.solutions_existing += 1

    def _is_open(self, submitted: int) -> bool:
        """``refresh_queue_state``'s rule for a solution with no other assignment or report."""
        return submitted < self.campaign.overlap and self.campaign.bad_problem_limit > 0

    def _unseen_labels(self, hashed: list) -> list[tuple[str, LabelIn, str]]:
        """(solution hash, label, submission key) of the labels not met earlier in the file."""
        out = []
        for _, s, _, sh in hashed:
            for label in s.labels:
                key = label.submission_key(self.campaign.pk, sh)
                if key in self.keys:
                    self.result.assignments_existing += 1
                    continue
                self.keys.add(key)
                out.append((sh, label, key))
        return out

    def _labels(self, labels: list, new_steps: dict[int, list[int]]) -> None:
        """Create an assignment with its step labels for every label not imported before."""
        todo = [(self.solutions[sh], label, key) for sh, label, key in labels]
        # Only a solution that existed before this batch can have the assignment already.
        old = [(pk, label, key) for pk, label, key in todo if pk not in new_steps]
        if old and self.had_solutions:
            # (annotator, submission_key) is the unique index this lookup can use.
            existing = set(
                Assignment.objects.filter(
                    annotator_id__in={self.users[label.labeler] for _, label, _ in old},
                    submission_key__in=[key for _, _, key in old],
                ).values_list("submission_key", flat=True)
            )
            self.result.assignments_existing += len(existing)
            todo = [t for t in todo if t[2] not in existing]
        steps = dict(new_steps)
        old_solutions = {pk for pk, _, _ in todo if pk not in new_steps}
        if old_solutions:
            self.touched |= old_solutions
            for solution_id, pk in (
                Step.objects.filter(solution_id__in=old_solutions)
                .order_by("solution_id", "index")
                .values_list("solution_id", "pk")
            ):
                steps.setdefault(solution_id, []).append(pk)
        if not todo:
            return
        assignment_rows, label_rows = [], []
        for aid, (solution_id, label, key) in zip(
            self.ids[Assignment].take(len(todo)), todo, strict=True
        ):
            assignment_rows.append(
                (
                    aid,
                    self.campaign.pk,
                    solution_id,
                    self.users[label.labeler],
                    Assignment.Status.SUBMITTED,
                    label.submitted_at or self.now,
                    label.submitted_at,
                    label.finish_reason,
                    label.total_time_ms,
                    key,
                    self.source,
                )
            )
            for sid, sl in zip(steps[solution_id], label.steps, strict=False):
                label_rows.append(
                    (
                        aid,
                        sid,
                        sl.rating,
                        sl.flagged,
                        sl.completion_index,
                        json.dumps(sl.alternatives) if sl.alternatives else "[]",
                        None if sl.human_completion is None else json.dumps(sl.human_completion),
                        sl.chosen_completion,
                    )
                )
        self.result.assignments_created += self.assignment_rows.insert(assignment_rows)
        self.result.step_labels_created += self.label_rows.insert(label_rows)

    def finish(self) -> None:
        for pk, fill in self.fills.items():
            Problem.objects.filter(pk=pk).update(**fill)
        touched = sorted(self.touched)
        for i in range(0, len(touched), CHUNK):
            Solution.objects.filter(pk__in=touched[i : i + CHUNK]).refresh_queue_state()

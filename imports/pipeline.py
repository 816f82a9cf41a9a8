"""``import_file``: validate a whole file, then write it in one transaction, then grade.

Two streaming passes over the file, never holding it in memory:

1. **validate**: parse every line with the format's parser; collect up to ``MAX_ERRORS`` errors,
   each naming file, line, field and problem. Any error: nothing is written.
2. **write**: parse again (in a thread, ahead of the writer) and write in batches inside one
   transaction (``db_writer.DatabaseWriter``, ``rows.TableRows``: COPY on PostgreSQL). Problems and
   solutions are deduplicated by their content hashes, submitted labels by a submission key
   (campaign, labeler, timestamp, solution, ratings), so importing a file twice writes nothing the
   second time.

New solutions are written with their queue slots already counted; older solutions that received
labels are recounted with ``refresh_queue_state``. Then the new solutions' answers are graded
(after the commit: grading is slow and needs no lock), under the campaign's grading rule. A
format may name the rule its solutions were graded by (PRM800K's: ``ImportFormat.grading_rule``);
a campaign that has no solutions when such a file comes takes that rule, in the import's
transaction, so PRM800K's solutions grade as its labels were made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from common.readahead import read_ahead
from labeling.grading import PRM800K, solutions_grade
from labeling.models import Assignment, Campaign, Problem, Solution, Step, StepLabel
from labeling.services import campaign_grading_rule_adopt

from .db_writer import DatabaseWriter
from .jsonl import parse_jsonl
from .prm800k import parse_prm800k, parse_trajectories
from .processbench import parse_processbench
from .reading import Parser, batches, validate
from .records import SolutionIn
from .result import ImportResult, ImportValidationError, LineError
from .splitting import SplitError, check_mode
from .trajectories import parse_agentprocessbench, parse_anthropic, parse_openai

__all__ = [
    "FORMATS",
    "ImportFormat",
    "ImportResult",
    "ImportValidationError",
    "LineError",
    "import_file",
]


@dataclass(frozen=True)
class ImportFormat:
    """One import format: its parser, what it is in words (the upload form, the command), and
    the grading rule its solutions' labels were made under, if the source had one: a campaign
    whose first solutions come in this format grades by it (``labeling.grading.rules``)."""

    parse: Parser
    description: str
    grading_rule: str | None = None


# Every format, declared once (docs/contributing.md: how to add one).
FORMATS: dict[str, ImportFormat] = {
    "prm800k": ImportFormat(parse_prm800k, "PRM800K label lines (phase 1 or 2)", PRM800K),
    "prm800k-trajectories": ImportFormat(
        parse_trajectories, "PRM800K phase 1 trajectories", PRM800K
    ),
    "processbench": ImportFormat(parse_processbench, "ProcessBench records"),
    "jsonl": ImportFormat(parse_jsonl, "problems with solutions (generic, GSM8K, Qwen2.5-Math)"),
    "agent-openai": ImportFormat(
        parse_openai, "agent trajectories: OpenAI-style chat messages with tool calls"
    ),
    "agent-anthropic": ImportFormat(
        parse_anthropic, "agent trajectories: Anthropic-style tool_use / tool_result blocks"
    ),
    "agentprocessbench": ImportFormat(
        parse_agentprocessbench, "agent trajectories: AgentProcessBench records (with labels)"
    ),
}
OPTIONS = {"as_gold", "generator", "labeler", "split"}


def import_file(
    path: Path | str,
    *,
    campaign: Campaign,
    fmt: str,
    grade: bool = True,
    progress: bool | Callable[[str, float], None] = False,
    before_commit: Callable[[ImportResult], None] | None = None,
    import_job_id: int | None = None,
    **options: Any,
) -> ImportResult:
    """Import a file of one of ``FORMATS`` into ``campaign``: all of it, or nothing.

    Options: ``as_gold`` (``qc``/``screening``: ProcessBench labels and JSONL ``gold_ratings``
    become gold step ratings), ``generator`` (default generator name), ``labeler`` (account of
    the trajectories' labels). Raises ImportValidationError on bad input. ``progress``: True
    shows bars on a terminal; a callable is called with the phase (``validating``, ``writing``,
    ``grading``) and the share of the file read in it (the web upload's job records them).
    ``before_commit`` is called with the counts inside the transaction, after the last write:
    the upload's job records them there, and an exception it raises writes nothing at all.
    ``import_job_id``: the upload's job, recorded on the solutions created (the data browser
    filters by it).
    """
    started = time.monotonic()
    path = Path(path)
    parse = _parser(path, fmt, options, campaign=campaign)
    labelers = validate(path, parse, options, progress)
    with transaction.atomic(), _constraints_checked_per_statement():
        _grading_rule_from_format(campaign, fmt)
        writer = DatabaseWriter(
            campaign=campaign, source=fmt, file=path.name, import_job_id=import_job_id
        )
        writer.add_labelers(labelers)
        for items in read_ahead(
            batches(path, parse, options, progress), depth=2, name="import-parse"
        ):
            writer.write(items)
        writer.finish()
        if before_commit is not None:
            before_commit(writer.result)
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


def _grading_rule_from_format(campaign: Campaign, fmt: str) -> None:
    """A campaign without solutions takes the grading rule of the format its first come in
    (``labeling.services.campaign_grading_rule_adopt``). Inside the import's transaction: a
    refused file leaves the rule as it was."""
    rule = FORMATS[fmt].grading_rule
    if rule is not None:
        campaign_grading_rule_adopt(campaign=campaign, rule=rule)


# Rows after which an import refreshes PostgreSQL's statistics of the tables it wrote.
ANALYZE_AFTER_ROWS = 10_000


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
        writer = DatabaseWriter(campaign=campaign, source=source, file=source)
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


def _parser(path: Path, fmt: str, options: dict, *, campaign: Campaign) -> Parser:
    problems = []
    kind = campaign.kind
    if fmt not in FORMATS:
        # The formats this campaign's kind of trace takes (``labeling.traces``).
        problems.append(f"unknown format {fmt!r} (one of {', '.join(kind.import_formats)})")
    elif fmt not in kind.import_formats:
        problems.append(
            f"{fmt} is not a format of this campaign: it labels {kind.title} "
            f"(formats {', '.join(kind.import_formats)})"
        )
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
    return FORMATS[fmt].parse

"""The database reader: a campaign's exportable solutions, streamed in keyset batches.

:func:`iter_solutions` walks a campaign's solutions ordered by (problem, solution) and yields each
with its steps and its exportable assignments and labels; it holds one batch at a time, so memory
stays flat whatever the campaign's size. The formats turn these plain rows into records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Q

from common.readahead import read_ahead
from exports.policy import LabelPolicy, is_math500
from exports.pseudonyms import annotator_pseudonym
from labeling.curation.filters import SolutionFilter
from labeling.models import (
    Adjudication,
    Assignment,
    Campaign,
    Review,
    Solution,
    Step,
    StepLabel,
)
from machines.labels import MachineLabel, machine_labels_read

Progress = Callable[[int, int], None]


def _column(path: str):
    """A field read from ``path`` (an ORM lookup) rather than from the column of its own name."""
    return field(metadata={"column": path})


def _columns(data: type, *, until: str | None = None) -> tuple[str, ...]:
    """What a reader's ``values_list`` reads for each field of ``data`` (before ``until``), in
    order: the dataclass is the one list of the columns, and rows fill it positionally."""
    out = []
    for f in fields(data):
        if f.name == until:
            break
        out.append(f.metadata.get("column", f.name))
    return tuple(out)


@dataclass(slots=True)
class LabelData:
    index: int = _column("step__index")
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
    annotator: str  # the pseudonym, or the username (policy option annotator_ids)
    submitted_at: datetime | None
    finish_reason: str
    total_time_ms: int | None
    review: str | None
    corrections: dict[str, int]
    labels: list[LabelData] = field(default_factory=list)
    # ``submitted`` (the current work), or history a policy option asked for: ``rejected``
    # (a reviewer rejected it) or ``superseded`` (its annotator amended it).
    status: str = Assignment.Status.SUBMITTED
    review_comment: str = ""
    # The rating of a trajectory's final outcome (``Assignment.outcome_rating``).
    outcome_rating: int | None = None

    @property
    def is_current(self) -> bool:
        return self.status == Assignment.Status.SUBMITTED


@dataclass(slots=True)
class SolutionData:
    id: int
    campaign_id: int
    problem_id: int
    problem_text: str = _column("problem__text")
    ground_truth_answer: str = _column("problem__ground_truth_answer")
    ground_truth_solution: str | None = _column("problem__ground_truth_solution")
    unique_id: str = _column("problem__unique_id")
    generator: str
    generation: int | None
    kind: str
    pre_generated: bool
    answer: str | None
    answer_is_correct: bool | None
    verifier_score: float | None
    # An agent trajectory's conversation (``Solution.trace``); None for math.
    trace: Mapping[str, Any] | None = _column("trace")
    split: str
    steps: list[str] = field(default_factory=list)
    assignments: list[AssignmentData] = field(default_factory=list)
    # Step index -> a reviewer's adjudicated rating; read only for ``annotators="adjudicated"``.
    adjudications: dict[int, int] = field(default_factory=dict)
    # Step index -> P(positive) of ``annotators="weighted"`` (``exports.weighted``).
    probabilities: dict[int, float] = field(default_factory=dict)
    # Step index -> where rollouts and a judge agree; read only when the policy's
    # ``machine_labels`` is not ``never`` (``machines.labels``).
    machine: dict[int, MachineLabel] = field(default_factory=dict)

    def human_rated(self) -> set[int]:
        """The step indexes that a current assignment rated (or replaced with its own step)."""
        return {
            lab.index
            for a in self.assignments
            if a.is_current
            for lab in a.labels
            if lab.rating is not None or lab.human_completion is not None
        }

    def machine_kept(self, policy: LabelPolicy) -> dict[int, MachineLabel]:
        """The machine labels the policy exports: all of them under ``consensus``, those of
        steps no human rated under ``fill``."""
        if policy.machine_labels == "never" or not self.machine:
            return {}
        if policy.machine_labels == "fill":
            rated = self.human_rated()
            return {i: m for i, m in self.machine.items() if i not in rated}
        return self.machine

    def machine_prefix(self, policy: LabelPolicy) -> list[MachineLabel]:
        """The kept machine labels from the first step while they last: a path, as a PRM800K
        line needs one."""
        kept = self.machine_kept(policy)
        out: list[MachineLabel] = []
        while len(out) in kept:
            out.append(kept[len(out)])
        return out


# What a solution's row reads: every field of ``SolutionData`` up to its split.
_SOLUTION_FIELDS = _columns(SolutionData, until="split")
_LABEL_FIELDS = _columns(LabelData)


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
    selection: SolutionFilter | None = None,
) -> Iterator[SolutionData]:
    """Yield the campaign's solutions that have exportable labels, ordered by problem.

    ``selection``: only the solutions these data-browser filters match
    (``labeling.curation.filters``).

    Exportable: a submitted assignment on a solution of an included kind, not rejected by a
    reviewer (and accepted, with ``reviewed_only``), on a problem the policy keeps; with
    ``include_rejected`` and ``include_superseded`` also rejected work and earlier versions of
    amended work, each with its ``status``. Solutions come in keyset batches of ``batch_size``,
    each read with four queries (solutions with their problem, steps, assignments, labels; a
    fifth for adjudications under ``annotators="adjudicated"``, another for the machine evidence
    under ``machine_labels``, which also yields solutions that only machines labelled); nothing
    outlives its batch but
    the next one, which a thread reads while this one is written (see ``common.readahead``).
    """
    weights = None
    if policy.annotators == "weighted":
        from exports.weighted import campaign_probabilities

        weights = campaign_probabilities(
            campaign_id=campaign.pk,
            kinds=policy.kinds,
            neutral_positive=policy.neutral == "positive",
        )
    batches = _batches(campaign, policy, batch_size, stats or StreamStats(), selection)
    if not connections[DEFAULT_DB_ALIAS].in_atomic_block:
        # Inside a transaction another thread's connection would not see its writes.
        batches = read_ahead(batches, name="export-reader")
    for solutions, done, total in batches:
        for solution in solutions:
            if weights is not None:
                solution.probabilities = {
                    index: weights[(solution.id, index)]
                    for index in range(len(solution.steps))
                    if (solution.id, index) in weights
                }
            yield solution
        if progress:
            progress(done, total)


def _batches(
    campaign: Campaign,
    policy: LabelPolicy,
    batch_size: int,
    stats: StreamStats,
    selection: SolutionFilter | None = None,
) -> Iterator[tuple[list[SolutionData], int, int]]:
    """(solutions with labels, solutions read so far, solutions in all), batch by batch."""
    solutions = Solution.objects.filter(campaign=campaign, kind__in=policy.kinds)
    if selection:
        solutions = selection.apply(solutions)
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
                current_split = policy.split_for_problem(row[3])
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
    statuses = [Assignment.Status.SUBMITTED]
    if policy.include_rejected:
        statuses.append(Assignment.Status.REJECTED)
    if policy.include_superseded:
        statuses.append(Assignment.Status.SUPERSEDED)
    assignments = Assignment.objects.filter(solution_id__in=solutions, status__in=statuses)
    if policy.reviewed_only:
        reviewed = Q(review__decision=Review.Decision.ACCEPTED)
        if policy.include_rejected:
            reviewed |= Q(review__decision=Review.Decision.REJECTED)
        assignments = assignments.filter(reviewed)
    by_assignment: dict[int, AssignmentData] = {}
    by_username = policy.annotator_ids == "username"
    for (
        a_id,
        s_id,
        annotator,
        submitted_at,
        reason,
        total,
        decision,
        corrections,
        status,
        comment,
        outcome,
    ) in assignments.order_by("solution_id", "submitted_at", "id").values_list(
        "id",
        "solution_id",
        "annotator__username" if by_username else "annotator_id",
        "submitted_at",
        "finish_reason",
        "total_time_ms",
        "review__decision",
        "review__corrections",
        "status",
        "review__comment",
        "outcome_rating",
    ):
        if decision == Review.Decision.REJECTED:
            # Rejected before rejection released the slot, or a review written around it.
            status = Assignment.Status.REJECTED
        if s_id not in by_id or status not in statuses:
            continue
        if not by_username:
            annotator = annotator_pseudonym(campaign_id=first.campaign_id, user_id=annotator)
        data = AssignmentData(
            a_id,
            annotator,
            submitted_at,
            reason,
            total,
            decision,
            corrections or {},
            status=status,
            review_comment=comment or "",
            outcome_rating=outcome,
        )
        by_id[s_id].assignments.append(data)
        by_assignment[a_id] = data
    machine = policy.machine_labels != "never"
    if not by_assignment and not machine:
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
            assignment__solution_id__in=solutions, assignment__status__in=statuses
        )
        .order_by("assignment_id", "step__index")
        .values_list("assignment_id", *_LABEL_FIELDS)
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
    if policy.annotators == "adjudicated":
        for s_id, index, rating in Adjudication.objects.filter(
            step__solution_id__in=solutions, replaced_at__isnull=True
        ).values_list("step__solution_id", "step__index", "rating"):
            if s_id in by_id:
                by_id[s_id].adjudications[index] = rating
    if machine:
        for s_id, labels in machine_labels_read(solutions).items():
            if s_id in by_id:
                by_id[s_id].machine = labels
    for s_id in ids:
        solution = by_id[s_id]
        if solution.assignments or solution.machine:
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

"""What the data browser reads: a page of solutions that match a filter, and one solution with
every label on it. Reads only; the writes are ``labeling.curation.actions``.

Managers and reviewers see everything here (who labelled what, gold, reviews); the page's
views check the role first (``labeling.permissions.campaign_for``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db.models import Count, QuerySet
from django.db.models.functions import Left
from django.shortcuts import get_object_or_404

from labeling.consensus import plurality_rating
from labeling.curation import filters, history
from labeling.models import (
    Assignment,
    Campaign,
    Membership,
    Problem,
    Review,
    Solution,
    SolutionBulkAction,
    Step,
    StepEvidence,
    StepLabel,
)
from labeling.scores import step_scores, step_scores_deferred
from labeling.templatetags.labeling_tags import EXCERPT_SOURCE_CHARS

PAGE_SIZE = 50
GENERATORS_CACHE_SECONDS = 300
# The page counts matches up to here ("more than 1,000"): an exact count of a broad filter would
# cost more than the page; a bulk action counts exactly when it runs.
COUNT_CAP = 1000
ROW_FIELDS = (
    "id",
    "problem_id",
    "kind",
    "archived",
    "is_open",
    "answer_is_correct",
    "generator",
    "assignment_count",
    "prm_score",
    "priority",
)


def state_of(solution: Solution, leased: bool) -> str:
    """The solution's queue state as the browser's ``state`` filter names it."""
    if solution.archived:
        return "archived"
    if leased:
        return "leased"
    return "open" if solution.is_open else "complete"


@dataclass(frozen=True)
class Browse:
    """One page of the browser: the solutions, how many match (``more``: over ``COUNT_CAP``),
    the facets' counts (none when the matches are too many to count), a cursor that could not
    be read (``error``), the bulk job the page follows, and the filter lists' choices."""

    page: filters.Page
    count: int
    more: bool
    facets: dict[str, dict[str, int]]
    error: str | None
    job: SolutionBulkAction | None
    generators: list[str]
    annotators: list[tuple[int, str]]


def solutions_browse(
    *,
    campaign: Campaign,
    solution_filter: filters.SolutionFilter,
    cursor: str | None,
    job_id: int | None = None,
    error: str | None = None,
) -> Browse:
    """The browser's page of the campaign's solutions that ``solution_filter`` matches, after
    ``cursor``; ``error`` is what the filter's parsing said already (the facets are then not
    counted). A cursor that cannot be read gives the first page, and says why."""
    matching = solution_filter.apply(Solution.objects.filter(campaign=campaign))
    # The problem's text is read for the page's rows only, after the page is cut (a join here
    # would be computed for every match before the sort).
    rows = matching.only(*ROW_FIELDS).annotate(leased=filters.live_lease())
    try:
        page = filters.solutions_page(rows, solution_filter, cursor=cursor, size=PAGE_SIZE)
    except filters.FilterError as problem:
        error = problem.message
        page = filters.solutions_page(rows, solution_filter, cursor=None, size=PAGE_SIZE)
    excerpts = dict(
        Problem.objects.filter(pk__in={s.problem_id for s in page.solutions})
        .annotate(excerpt=Left("text", EXCERPT_SOURCE_CHARS))
        .values_list("pk", "excerpt")
    )
    for s in page.solutions:
        s.state = state_of(s, s.leased)
        s.problem_excerpt = excerpts.get(s.problem_id, "")
    if page.next_cursor is None and not cursor:
        count, more = len(page.solutions), False  # all of them are on this page
    else:
        count, more = filters.count_capped(matching, cap=COUNT_CAP)
    job = None
    if job_id is not None:
        job = SolutionBulkAction.objects.filter(campaign=campaign, pk=job_id).first()
    return Browse(
        page=page,
        count=count,
        more=more,
        facets={} if more or error else facet_counts(matching),
        error=error,
        job=job,
        generators=generators(campaign),
        annotators=annotators_named(campaign),
    )


def facet_counts(matching: QuerySet[Solution]) -> dict[str, dict[str, int]]:
    """How many of the matches fall under each kind and each final answer, from one grouped
    query (only asked when the matches are few enough to count: ``COUNT_CAP``)."""
    counts: dict[str, dict[str, int]] = {"kind": {}, "answer": {}}
    rows = matching.order_by().values_list("kind", "answer_is_correct").annotate(n=Count("pk"))
    for kind, correct, n in rows:
        answer = "ungraded" if correct is None else "right" if correct else "wrong"
        counts["kind"][kind] = counts["kind"].get(kind, 0) + n
        counts["answer"][answer] = counts["answer"].get(answer, 0) + n
    return counts


def generators(campaign: Campaign) -> list[str]:
    """The campaign's generator names, for the filter's list (a scan of every solution: cached)."""
    key = f"browser-generators:{campaign.pk}"
    names = cache.get(key)
    if names is None:
        names = list(
            Solution.objects.filter(campaign=campaign)
            .exclude(generator="")
            .order_by("generator")
            .values_list("generator", flat=True)
            .distinct()[:200]
        )
        cache.set(key, names, GENERATORS_CACHE_SECONDS)
    return names


def annotators_named(campaign: Campaign) -> list[tuple[int, str]]:
    """The "Labelled by" choices: people by name, accounts an import made by a short id
    (``imported 340d89bc``), as every other page names them; people first."""
    rows = (
        Membership.objects.filter(campaign=campaign, role=Membership.Role.ANNOTATOR)
        .order_by("is_imported", "user__username")
        .values_list("user_id", "user__username", "is_imported")
    )
    return [
        (user_id, Membership.short_name(name, imported=imported))
        for user_id, name, imported in rows
    ]


# --- The item page ---------------------------------------------------------------------------


@dataclass
class AnnotatorColumn:
    assignment: Assignment
    username: str
    review: Review | None


@dataclass
class StepRow:
    step: Step
    labels: list[StepLabel | None]  # one per AnnotatorColumn
    scores: list[float | None]  # one per scorer (``labeling.scores``), in the page's order
    consensus: int | None
    evidence: list[StepEvidence]  # what machines say about the step (``labeling.models.evidence``)


def campaign_solution(*, campaign: Campaign, pk: int) -> Solution:
    """The campaign's solution ``pk`` with its problem; 404 for any other."""
    return get_object_or_404(Solution.objects.select_related("problem"), campaign=campaign, pk=pk)


def solution_selection(*, solution: Solution) -> QuerySet[Solution]:
    """One solution as the selection the curation actions take (they act on querysets)."""
    return Solution.objects.filter(pk=solution.pk)


def solution_item(*, campaign: Campaign, pk: int, scores_now: bool = False) -> dict[str, Any]:
    """The item page's solution ``pk`` (404 for another campaign's) with every submitted
    labelling side by side, each step's consensus, scores and machine evidence, gold, reviews,
    live leases and the solution's history. Step scores that cost a model load are left
    pending (``scores_pending``) unless ``scores_now``: the page asks for them once shown."""
    solution = campaign_solution(campaign=campaign, pk=pk)
    submitted = list(
        Assignment.objects.filter(solution=solution, status=Assignment.Status.SUBMITTED)
        .select_related("annotator")
        .order_by("submitted_at", "pk")
    )
    reviews = {
        r.assignment_id: r
        for r in Review.objects.filter(assignment__in=submitted).select_related("reviewer")
    }
    imported = set(
        Membership.objects.filter(
            campaign=campaign, user__in={a.annotator_id for a in submitted}, is_imported=True
        ).values_list("user_id", flat=True)
    )
    columns = [
        AnnotatorColumn(
            a,
            Membership.short_name(a.annotator.get_username(), imported=a.annotator_id in imported),
            reviews.get(a.pk),
        )
        for a in submitted
    ]
    labels = {
        (label.assignment_id, label.step_id): label
        for label in StepLabel.objects.filter(assignment__in=submitted)
    }
    steps = list(Step.objects.filter(solution=solution).order_by("index"))
    if scores_now:
        scores: dict[str, list[float] | None] = dict(
            step_scores(campaign_id=campaign.pk, solution_id=solution.pk)
        )
    else:
        scores = step_scores_deferred(campaign_id=campaign.pk, solution_id=solution.pk)
    evidence: dict[int, list[StepEvidence]] = {}
    for item in StepEvidence.objects.filter(solution=solution).order_by("kind", "model"):
        evidence.setdefault(item.step_id, []).append(item)
    rows = []
    for step in steps:
        cells = [labels.get((c.assignment.pk, step.pk)) for c in columns]
        rows.append(
            StepRow(
                step=step,
                labels=cells,
                scores=[
                    s[step.index] if s is not None and step.index < len(s) else None
                    for s in scores.values()
                ],
                consensus=plurality_rating(c.rating if c else None for c in cells),
                evidence=evidence.get(step.pk, []),
            )
        )
    leases = list(
        Assignment.objects.live_leases().filter(solution=solution).select_related("annotator")
    )
    return {
        "solution": solution,
        "columns": columns,
        "rows": rows,
        "scorers": list(scores),
        "scores_pending": [name for name, s in scores.items() if s is None],
        "has_evidence": bool(evidence),
        "leases": leases,
        "state": state_of(solution, bool(leases)),
        "wanted": campaign.overlap + solution.extra_labels,
        "history": history.solution_history(solution=solution),
        "has_gold": any(s.gold_rating is not None for s in steps),
    }

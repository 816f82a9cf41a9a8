"""What the gold pages read: the campaign's gold solutions, what makes its gold sets weak, and gold
ratings taken from the labels of one solution (one annotator's, or the consensus of all)."""

from __future__ import annotations

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Left

from common.pages import query_id
from labeling.consensus import plurality_rating
from labeling.gold.scores import gold_set_warnings
from labeling.gold.services import GoldError
from labeling.models import Assignment, Campaign, Solution, Step, StepLabel
from labeling.templatetags.labeling_tags import EXCERPT_SOURCE_CHARS


def gold_solutions(*, campaign: Campaign, page: int = 1, per_page: int = 50) -> tuple[list, bool]:
    """A page of quality-control and screening solutions, with how many steps carry gold."""
    steps = Step.objects.filter(solution=OuterRef("pk")).order_by().values("solution")
    start = (max(page, 1) - 1) * per_page
    rows = list(
        Solution.objects.filter(campaign=campaign)
        .exclude(kind=Solution.Kind.REGULAR)
        .order_by("kind", "id")
        .values("id", "kind", "assignment_count", "is_open")
        .annotate(
            problem=Left("problem__text", EXCERPT_SOURCE_CHARS),
            steps_n=Subquery(steps.annotate(n=Count("id")).values("n")),
            gold_n=Subquery(
                steps.filter(gold_rating__isnull=False).annotate(n=Count("id")).values("n")
            ),
        )[start : start + per_page + 1]
    )
    return rows[:per_page], len(rows) > per_page


def gold_warnings(*, campaign: Campaign) -> list[str]:
    """Why the campaign's screening or QC set cannot tell good annotators from bad ones
    (``gold_set_warnings``, per kind). Gold sets are small: every gold step read."""
    by_kind: dict[str, dict[int, list[tuple[int, int | None]]]] = {}
    for kind, solution_id, index, rating in (
        Step.objects.filter(solution__campaign=campaign)
        .exclude(solution__kind=Solution.Kind.REGULAR)
        .order_by("solution_id", "index")
        .values_list("solution__kind", "solution_id", "index", "gold_rating")
    ):
        by_kind.setdefault(kind, {}).setdefault(solution_id, []).append((index, rating))
    names = {Solution.Kind.SCREENING: "screening", Solution.Kind.QUALITY_CONTROL: "quality-control"}
    return [
        warning
        for kind in (Solution.Kind.SCREENING, Solution.Kind.QUALITY_CONTROL)
        if kind in by_kind
        for warning in gold_set_warnings(
            by_kind[kind].values(),
            stop_at_first_error=campaign.stop_at_first_error,
            kind=names[kind],
        )
    ]


def gold_from_labels(*, solution: Solution, source: str) -> list[int | None]:
    """Gold ratings from one submitted assignment's ratings (``source``: its id), or from the
    consensus of all (``"consensus"``); ``GoldError`` for an assignment not submitted here."""
    steps = list(
        Step.objects.filter(solution=solution).order_by("index").values_list("pk", "index")
    )
    submitted = Assignment.objects.filter(solution=solution, status=Assignment.Status.SUBMITTED)
    if source == "consensus":
        by_step: dict[int, list[int | None]] = {}
        for step_id, rating in StepLabel.objects.filter(assignment__in=submitted).values_list(
            "step_id", "rating"
        ):
            by_step.setdefault(step_id, []).append(rating)
        return [plurality_rating(by_step.get(step_id, [])) for step_id, _ in steps]
    if query_id(source) is None or not submitted.filter(pk=int(source)).exists():
        raise GoldError("Choose a submitted assignment of this solution.")
    ratings = dict(
        StepLabel.objects.filter(assignment_id=int(source)).values_list("step_id", "rating")
    )
    return [ratings.get(step_id) for step_id, _ in steps]

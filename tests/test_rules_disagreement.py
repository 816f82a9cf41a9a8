"""One rule for "annotators disagree on this step", held in every spelling to the same steps.

The rule's home is ``StepLabelQuerySet`` (``disputed`` for an ``Exists``, ``disputed_steps``
for a GROUP BY), ``disputed_step_count`` (raw SQL per solution, what ``disputes_recount`` keeps
in ``Solution.disputed_steps`` for the browser's sort) and ``ratings_disagree`` (Python). The
dataset has agreeing, disagreeing and draft-only labels, and
labels of rejected, superseded and unrated work that must not count, on regular and gold
solutions; every caller (data browser filter and sort, review list, adjudication queue and page)
must find the same steps.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from annotators.review.selectors import adjudication_detail, disputed_steps, review_queue
from labeling.curation.filters import SolutionFilter
from labeling.models import (
    Assignment,
    Solution,
    StepLabel,
    disputed_step_count,
    ratings_disagree,
)
from labeling.queue.review import REVIEWABLE
from tests.factories import make_campaign, make_gold_solution, make_labelled, make_solution

pytestmark = pytest.mark.django_db

S = Assignment.Status


@pytest.fixture
def campaign():
    """A campaign whose solutions are named by what their labels say (``Solution.generator``)."""
    campaign = make_campaign(overlap=3)

    def solution(name: str, *works: tuple[str, list[int | None]], kind: str = "regular"):
        if kind == "regular":
            s = make_solution(campaign=campaign, steps=["a", "b", "c"], generator=name)
        else:
            s = make_gold_solution(campaign=campaign, kind=kind, gold=[1, 1, 1], generator=name)
        for status, ratings in works:
            make_labelled(solution=s, ratings=ratings, status=status)

    solution("agree", (S.SUBMITTED, [1, 1, -1]), (S.SUBMITTED, [1, 1, -1]))
    solution("one step", (S.SUBMITTED, [1, 1, 0]), (S.SUBMITTED, [1, -1]))
    solution("two steps of three", (S.SUBMITTED, [1, 0, 1]), (S.SUBMITTED, [0, 0, 1]),
             (S.SUBMITTED, [1, 0, -1]))  # fmt: skip
    solution("draft only", (S.SUBMITTED, [1, 1, 1]), (S.LEASED, [-1, -1, -1]))
    solution("against rejected work", (S.SUBMITTED, [1, 1, 1]), (S.REJECTED, [1, -1, 1]))
    solution("against an earlier version", (S.SUBMITTED, [1, 1, 1]), (S.SUPERSEDED, [-1]))
    solution("unrated", (S.SUBMITTED, [1, None, None]), (S.SUBMITTED, [1, 1, 1]))
    solution("alone", (S.SUBMITTED, [1, -1, 0]))
    solution("gold", (S.SUBMITTED, [1, 1, 1]), (S.SUBMITTED, [1, 0, 1]), kind="qc")
    return campaign


def _step_ratings(campaign) -> dict[int, list[int | None]]:
    """step id -> the ratings of its submitted labels, loaded (for the Python form)."""
    out: dict[int, list[int | None]] = defaultdict(list)
    for step_id, rating in StepLabel.objects.filter(
        step__solution__campaign=campaign, assignment__status=S.SUBMITTED
    ).values_list("step_id", "rating"):
        out[step_id].append(rating)
    return out


def _disputed(campaign) -> set[int]:
    return set(
        StepLabel.objects.filter(step__solution__campaign=campaign)
        .disputed()
        .values_list("step_id", flat=True)
    )


def _by_name(campaign, step_ids) -> dict[str, list[int]]:
    """generator name -> the indexes of those steps in it (what a reader of the dataset sees)."""
    out: dict[str, list[int]] = defaultdict(list)
    for name, index in (
        StepLabel.objects.filter(step_id__in=step_ids)
        .order_by("step__index")
        .values_list("step__solution__generator", "step__index")
        .distinct()
    ):
        out[name].append(index)
    return dict(out)


def test_the_rule_finds_the_steps_submitted_labels_rate_differently(campaign):
    assert _by_name(campaign, _disputed(campaign)) == {
        "one step": [1],
        "two steps of three": [0, 2],
        "gold": [1],
    }


def test_the_group_by_form_finds_the_same_steps(campaign):
    rows = StepLabel.objects.filter(step__solution__campaign=campaign).disputed_steps()
    assert {r["step_id"] for r in rows} == _disputed(campaign)
    ratings = _step_ratings(campaign)
    for r in rows:
        rated = [x for x in ratings[r["step_id"]] if x is not None]
        assert (r["n"], r["low"], r["high"]) == (len(rated), min(rated), max(rated))


def test_the_python_form_finds_the_same_steps(campaign):
    ratings = _step_ratings(campaign)
    assert {step for step, rs in ratings.items() if ratings_disagree(rs)} == _disputed(campaign)


def test_the_raw_sql_count_per_solution_is_the_rules(campaign):
    disputed = _disputed(campaign)
    counted = dict(
        Solution.objects.filter(campaign=campaign)
        .annotate(n=disputed_step_count())
        .values_list("pk", "n")
    )
    per_solution = {
        s.pk: s.steps.filter(pk__in=disputed).count()
        for s in Solution.objects.filter(campaign=campaign)
    }
    assert counted == per_solution


def test_the_kept_count_per_solution_is_the_rules(campaign):
    """``Solution.disputed_steps``, kept by ``disputes_recount`` (tests/test_disputes_kept.py
    recounts it through every writer)."""
    disputed = _disputed(campaign)
    for s in Solution.objects.filter(campaign=campaign):
        assert s.disputed_steps == s.steps.filter(pk__in=disputed).count(), s.generator


def test_the_data_browser_filters_and_sorts_by_the_rule(campaign):
    solutions = Solution.objects.filter(campaign=campaign)
    with_dispute = set(
        solutions.filter(steps__pk__in=_disputed(campaign)).values_list("pk", flat=True)
    )
    found = SolutionFilter.from_params({"disagree": "true"}).apply(solutions)
    assert set(found.values_list("pk", flat=True)) == with_dispute
    without = SolutionFilter.from_params({"disagree": "false"}).apply(solutions)
    assert (
        set(without.values_list("pk", flat=True))
        == set(solutions.values_list("pk", flat=True)) - with_dispute
    )
    ordered = SolutionFilter.from_params({"sort": "disagreement"}).ordered(solutions)
    assert [s.generator for s in ordered][:3] == ["two steps of three", "one step", "gold"]


def test_the_review_list_finds_work_that_other_submitted_work_contradicts(campaign):
    """A reviewer compares any reviewable work (rejected too) with the submitted rest."""
    rows, _ = review_queue(campaign=campaign, state="all", disagreement=True, per_page=100)
    submitted = defaultdict(list)  # step -> (assignment, rating) of submitted labels
    for a, step, rating in StepLabel.objects.filter(
        assignment__campaign=campaign, assignment__status=S.SUBMITTED, rating__isnull=False
    ).values_list("assignment_id", "step_id", "rating"):
        submitted[step].append((a, rating))
    expected = set()
    for a, step, rating in StepLabel.objects.filter(
        assignment__campaign=campaign, assignment__status__in=REVIEWABLE, rating__isnull=False
    ).values_list("assignment_id", "step_id", "rating"):
        if any(other != a and r != rating for other, r in submitted[step]):
            expected.add(a)
    assert {r["id"] for r in rows} == expected
    rejected = Assignment.objects.get(campaign=campaign, status=S.REJECTED)
    assert rejected.pk in expected  # its step 1 differs from the submitted work's


def test_the_adjudication_queue_and_page_agree_with_the_rule_on_regular_solutions(campaign):
    regular = {
        step
        for step in _disputed(campaign)
        if Solution.objects.filter(steps__pk=step, kind=Solution.Kind.REGULAR).exists()
    }
    assert {r["step_id"] for r in disputed_steps(campaign=campaign)} == regular
    for step in StepLabel.objects.filter(
        step__solution__campaign=campaign, step__solution__kind=Solution.Kind.REGULAR
    ).values_list("step_id", flat=True):
        assert adjudication_detail(campaign=campaign, step_id=step).disputed == (step in regular)

"""``Solution.disputed_steps`` is kept equal to the rule after every kind of change.

The rule's home is ``StepLabelQuerySet.disputed_steps``; the kept count is recounted by
``SolutionQuerySet.disputes_recount`` where submitted labels change: a submission, an amendment,
a rejection (and its reversal), an import of labels. An adjudication changes no label, so it
leaves the count as it is. After each change every solution's kept count must equal the rule's.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from annotators.review.selectors import adjudication_queue
from annotators.review.services import adjudication_decide, review_submit
from imports.pipeline import import_file
from labeling import queue
from labeling.curation.filters import SolutionFilter
from labeling.models import Assignment, Membership, Solution, Step, StepLabel
from tests.factories import make_campaign, make_member, make_solution, make_user, submit_ratings
from tests.test_import_prm800k import FILES, fixture_lines

pytestmark = pytest.mark.django_db


def _rule(campaign) -> dict[int, int]:
    """solution id -> the steps the rule finds disputed (solutions with none are left out)."""
    steps = StepLabel.objects.filter(assignment__campaign=campaign).disputed_steps()
    solution_of = dict(
        Step.objects.filter(pk__in=[r["step_id"] for r in steps]).values_list("pk", "solution_id")
    )
    return dict(Counter(solution_of[r["step_id"]] for r in steps))


def _kept(campaign) -> dict[int, int]:
    return dict(
        Solution.objects.filter(campaign=campaign, disputed_steps__gt=0).values_list(
            "pk", "disputed_steps"
        )
    )


def _assert_kept(campaign) -> dict[int, int]:
    kept = _kept(campaign)
    assert kept == _rule(campaign)
    return kept


@pytest.fixture
def campaign():
    return make_campaign(overlap=3)


def _serve(campaign, user, solution):
    """A lease of ``solution`` for ``user`` (the only open solution of the campaign)."""
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    assert assignment is not None and assignment.solution_id == solution.pk
    return assignment


def test_submit_amend_reject_and_adjudicate_keep_the_count(campaign):
    solution = make_solution(campaign=campaign, steps=["a", "b", "c", "d"])
    alice, bob, carol = (make_member(campaign=campaign).user for _ in range(3))
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user

    first = submit_ratings(assignment=_serve(campaign, alice, solution), annotator=alice,
                           ratings=[1, 1, 1, 1])  # fmt: skip
    assert _assert_kept(campaign) == {}
    submit_ratings(assignment=_serve(campaign, bob, solution), annotator=bob, ratings=[1, 0, 1, -1])
    assert _assert_kept(campaign) == {solution.pk: 2}

    # Alice amends her work: agrees on step 1, disagrees on step 2, stops before step 3.
    queue.assignment_amend(
        assignment=Assignment.objects.get(pk=first.assignment_id),
        annotator=alice,
        ratings=[1, 0, -1],
    )
    assert _assert_kept(campaign) == {solution.pk: 1}

    # A reviewer rejects Bob's work: his labels leave the disputes; accepting them again returns.
    bobs = Assignment.objects.get(annotator=bob, status=Assignment.Status.SUBMITTED)
    review_submit(assignment=bobs, reviewer=manager, decision="rejected", comment="careless")
    assert _assert_kept(campaign) == {}
    review_submit(assignment=bobs, reviewer=manager, decision="accepted")
    assert _assert_kept(campaign) == {solution.pk: 1}

    # Carol's submission adds a third view on step 0.
    submit_ratings(
        assignment=_serve(campaign, carol, solution), annotator=carol, ratings=[0, 0, -1]
    )
    assert _assert_kept(campaign) == {solution.pk: 2}

    # A decision changes no label: the count stays, the step leaves the open queue.
    open_before, _ = adjudication_queue(campaign=campaign)
    step = Step.objects.get(solution=solution, index=0)
    adjudication_decide(campaign=campaign, step=step, decided_by=manager, rating=1)
    assert _assert_kept(campaign) == {solution.pk: 2}
    open_after, _ = adjudication_queue(campaign=campaign)
    assert {r["step_id"] for r in open_before} - {r["step_id"] for r in open_after} == {step.pk}


def test_the_sort_and_the_filter_read_the_kept_count(campaign):
    calm = make_solution(campaign=campaign)
    split = make_solution(campaign=campaign)
    torn = make_solution(campaign=campaign)
    for solution, ratings in ((calm, [[1, 1, 1], [1, 1, 1]]), (split, [[1, 1, 1], [1, 0, 1]]),
                              (torn, [[1, 1, 1], [0, 0, -1]])):  # fmt: skip
        for r in ratings:
            user = make_user()
            make_member(campaign=campaign, user=user)
            a = Assignment.objects.create(
                campaign=campaign, solution=solution, annotator=user, status="leased"
            )
            submit_ratings(assignment=a, annotator=user, ratings=r)
    assert _assert_kept(campaign) == {split.pk: 1, torn.pk: 3}
    by_disagreement = SolutionFilter.from_params({"sort": "disagreement"})
    order = list(by_disagreement.ordered(Solution.objects.filter(campaign=campaign)))
    assert [s.pk for s in order] == [torn.pk, split.pk, calm.pk]
    disagree = SolutionFilter.from_params({"disagree": "true"})
    assert set(disagree.apply(Solution.objects.filter(campaign=campaign))) == {torn, split}


def test_an_import_of_labels_keeps_the_count(campaign, tmp_path):
    for path in FILES:
        import_file(path, campaign=campaign, fmt="prm800k", grade=False)
    _assert_kept(campaign)
    # The same solutions labelled again by someone who rates every first step otherwise.
    contrary = []
    for line in fixture_lines():
        line = json.loads(json.dumps(line))
        line["labeler"] = "contrarian"
        for completion in line["label"]["steps"][0]["completions"]:
            if completion.get("rating") is not None:
                completion["rating"] = 0 if completion["rating"] == 1 else 1
        contrary.append(line)
    path = tmp_path / "contrary.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in contrary))
    import_file(path, campaign=campaign, fmt="prm800k", grade=False)
    kept = _assert_kept(campaign)
    assert kept, "the contrary labels dispute some first steps"


def test_the_migration_backfills_existing_rows(campaign):
    """Rows written before the column existed (count 0) get the rule's count from the backfill."""
    import importlib
    from types import SimpleNamespace

    from django.db import connection

    solution = make_solution(campaign=campaign)
    for ratings in ([1, 1, 1], [1, -1]):
        user = make_user()
        make_member(campaign=campaign, user=user)
        a = Assignment.objects.create(
            campaign=campaign, solution=solution, annotator=user, status="leased"
        )
        submit_ratings(assignment=a, annotator=user, ratings=ratings)
    Solution.objects.filter(pk=solution.pk).update(disputed_steps=0)
    migration = importlib.import_module("labeling.migrations.0019_disputed_steps")
    # The backfill reads only its editor's connection (SQLite's editor cannot open in a test's
    # transaction).
    migration.disputes_backfill(None, SimpleNamespace(connection=connection))
    assert _assert_kept(campaign) == {solution.pk: 1}


def test_the_adjudication_queue_pages_through_the_rules_steps_in_order(campaign):
    """Pages found from the kept counts hold exactly the rule's steps, in order, per state."""
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    patterns = [[[1, 1, 1], [1, 1, 1]], [[1, 1, 1], [0, 0, -1]], [[1, 1, 1], [1, 0, 1]],
                [[1, 1, 1], [1, 1, 1]], [[0, 1, 1], [1, 0, 0]], [[1, 1, 1], [-1]]]  # fmt: skip
    for ratings in patterns:
        solution = make_solution(campaign=campaign)
        for r in ratings:
            user = make_user()
            make_member(campaign=campaign, user=user)
            a = Assignment.objects.create(
                campaign=campaign, solution=solution, annotator=user, status="leased"
            )
            submit_ratings(assignment=a, annotator=user, ratings=r)
    ordered = list(
        StepLabel.objects.filter(assignment__campaign=campaign)
        .disputed_steps()
        .order_by("step__solution_id", "step__index")
        .values_list("step_id", flat=True)
    )
    assert len(ordered) == 8
    for step_id in ordered[1:6:2]:  # decide three of them, one twice
        step = Step.objects.get(pk=step_id)
        adjudication_decide(campaign=campaign, step=step, decided_by=manager, rating=1)
    adjudication_decide(
        campaign=campaign, step=Step.objects.get(pk=ordered[3]), decided_by=manager, rating=0
    )
    decided = set(ordered[1:6:2])
    expected = {
        "all": ordered,
        "decided": [s for s in ordered if s in decided],
        "open": [s for s in ordered if s not in decided],
    }
    for state, steps in expected.items():
        for per_page in (1, 2, 3, 10):
            seen, page, more = [], 1, True
            while more:
                rows, more = adjudication_queue(
                    campaign=campaign, state=state, page=page, per_page=per_page
                )
                assert len(rows) <= per_page
                seen += [r["step_id"] for r in rows]
                page += 1
            assert seen == steps, (state, per_page)
        assert adjudication_queue(campaign=campaign, state=state, page=99)[0] == []

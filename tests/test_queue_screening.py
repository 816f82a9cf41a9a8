"""The screening gate: the score against gold ratings (kappa and first error found), pass and
fail, and what a failure stops."""

from __future__ import annotations

import pytest

from labeling import queue
from labeling.gold.scores import gold_agreement
from labeling.models import Membership
from tests.factories import make_campaign, make_gold_solution, make_member, make_solution

pytestmark = pytest.mark.django_db


def screened_campaign(**fields):
    """Two screening solutions (7 scored steps with stop at first error) and one regular one."""
    campaign = make_campaign(requires_screening=True, **fields)
    make_gold_solution(campaign=campaign, kind="screening", gold=[1, 1, 0, 1], priority=2)
    # The last step is after the first gold negative: never scored with stop at first error.
    make_gold_solution(campaign=campaign, kind="screening", gold=[1, 0, -1, 1], priority=1)
    regular = make_solution(campaign=campaign)
    return campaign, regular


def answer_screening(campaign, membership, answers):
    user = membership.user
    results = []
    for ratings in answers:
        assignment = queue.assignment_next(campaign=campaign, annotator=user)
        assert assignment.solution.kind == "screening"
        results.append(
            queue.assignment_submit(
                assignment=assignment,
                annotator=user,
                submission_key=f"s{assignment.pk}",
                ratings=ratings,
            )
        )
    membership.refresh_from_db()
    return results


def test_an_annotator_who_agrees_enough_with_gold_passes_and_gets_regular_work():
    campaign, regular = screened_campaign()
    membership = make_member(campaign=campaign)
    # 6 of 7 scored steps agree (step 2 of the first solution is off): kappa (6/7 - 23/49) /
    # (1 - 23/49) = 19/26, and the one gold error is found.
    results = answer_screening(campaign, membership, [[1, 1, 1, 1], [1, 0, -1]])
    assert [r.screening for r in results] == ["pending", "passed"]
    assert membership.screening == Membership.Screening.PASSED
    assert membership.screening_score == pytest.approx((19 / 26 + 1) / 2)
    assignment = queue.assignment_next(campaign=campaign, annotator=membership.user)
    assert assignment.solution_id == regular.pk


def test_an_annotator_below_the_threshold_fails_and_gets_no_more_work():
    campaign, _ = screened_campaign()
    membership = make_member(campaign=campaign)
    # 4 of 7: the second solution is rated negative at step 1, so steps 1 and 2 disagree: kappa
    # (4/7 - 21/49) / (1 - 21/49) = 1/4, and the first error (step 2) is missed.
    results = answer_screening(campaign, membership, [[1, 1, 1, 1], [1, -1]])
    assert results[-1].screening == "failed"
    assert membership.screening == Membership.Screening.FAILED
    assert membership.screening_score == pytest.approx(1 / 4 / 2)
    with pytest.raises(queue.ScreeningFailed):
        queue.assignment_next(campaign=campaign, annotator=membership.user)


def test_unrated_gold_steps_count_as_disagreement():
    assert gold_agreement(
        gold=[(0, 1), (1, 0), (2, -1), (3, 1)], ratings={0: 1}, stop_at_first_error=True
    ) == (1, 3)
    assert gold_agreement(
        gold=[(0, 1), (1, None), (2, -1), (3, 1)],
        ratings={0: 1, 2: -1, 3: 0},
        stop_at_first_error=False,
    ) == (2, 3)


def test_the_outcome_waits_until_every_screening_solution_is_done():
    campaign, _ = screened_campaign()
    membership = make_member(campaign=campaign)
    answer_screening(campaign, membership, [[1, 1, 0, 1]])
    assert (membership.screening, membership.screening_score) == ("pending", None)


def test_screening_questions_cannot_be_skipped():
    campaign, _ = screened_campaign()
    user = make_member(campaign=campaign).user
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    with pytest.raises(queue.AssignmentClosed):
        queue.assignment_skip(assignment=assignment, annotator=user)


def test_a_campaign_without_screening_solutions_serves_regular_work():
    campaign = make_campaign(requires_screening=True)
    regular = make_solution(campaign=campaign)
    membership = make_member(campaign=campaign)
    assignment = queue.assignment_next(campaign=campaign, annotator=membership.user)
    assert assignment.solution_id == regular.pk
    membership.refresh_from_db()
    assert membership.screening == Membership.Screening.PENDING


def test_a_failed_annotator_may_work_again_once_the_campaign_drops_screening():
    campaign, regular = screened_campaign()
    membership = make_member(campaign=campaign, screening=Membership.Screening.FAILED)
    campaign.requires_screening = False
    campaign.save()
    assignment = queue.assignment_next(campaign=campaign, annotator=membership.user)
    assert assignment.solution_id == regular.pk

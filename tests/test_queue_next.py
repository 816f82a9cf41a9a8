"""What ``assignment_next`` serves, rule by rule (single-threaded; SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from labeling import queue
from labeling.models import Assignment, Membership, Solution
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_member,
    make_solution,
    submit_ratings,
)

pytestmark = pytest.mark.django_db


def annotator_in(campaign, **fields):
    return make_member(campaign=campaign, **fields).user


def test_it_serves_the_highest_priority_solution_first():
    campaign = make_campaign()
    make_solution(campaign=campaign, priority=0.1)
    best = make_solution(campaign=campaign, priority=0.9)
    make_solution(campaign=campaign, priority=0.5)
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign))
    assert assignment.solution_id == best.pk


def test_it_serves_the_oldest_solution_first_among_equal_priorities():
    campaign = make_campaign(overlap=1)
    first, second, third = (make_solution(campaign=campaign, priority=0.5) for _ in range(3))
    served = []
    for _ in range(3):
        user = annotator_in(campaign)
        served.append(queue.assignment_next(campaign=campaign, annotator=user).solution_id)
    assert served == [first.pk, second.pk, third.pk]


def test_it_leases_for_the_campaign_lease_time():
    campaign = make_campaign(lease_seconds=600)
    make_solution(campaign=campaign)
    before = timezone.now()
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign))
    assert assignment.status == Assignment.Status.LEASED
    assert (
        before + timedelta(seconds=600)
        <= assignment.lease_expires_at
        <= timezone.now() + timedelta(seconds=600)
    )


def test_it_serves_the_leased_solution_again_on_resume():
    campaign = make_campaign()
    for _ in range(3):
        make_solution(campaign=campaign)
    user = annotator_in(campaign)
    first = queue.assignment_next(campaign=campaign, annotator=user)
    again = queue.assignment_next(campaign=campaign, annotator=user)
    assert again.pk == first.pk
    assert Assignment.objects.filter(annotator=user).count() == 1


def test_it_never_serves_more_annotators_than_the_overlap():
    campaign = make_campaign(overlap=2)
    solution = make_solution(campaign=campaign)
    served = [
        queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign)) for _ in range(3)
    ]
    assert [a.solution_id if a else None for a in served] == [solution.pk, solution.pk, None]
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (2, False)


def test_it_never_serves_a_solution_twice_to_one_annotator():
    campaign = make_campaign(overlap=3)
    a, b = make_solution(campaign=campaign), make_solution(campaign=campaign)
    user = annotator_in(campaign)
    seen = []
    while (assignment := queue.assignment_next(campaign=campaign, annotator=user)) is not None:
        seen.append(assignment.solution_id)
        submit_ratings(assignment=assignment, annotator=user)
    assert seen == [a.pk, b.pk]


def test_it_does_not_serve_a_skipped_solution_again():
    campaign = make_campaign(overlap=2)
    skipped, other = make_solution(campaign=campaign), make_solution(campaign=campaign)
    user = annotator_in(campaign)
    first = queue.assignment_next(campaign=campaign, annotator=user)
    assert first.solution_id == skipped.pk
    queue.assignment_skip(assignment=first, annotator=user)
    assert queue.assignment_next(campaign=campaign, annotator=user).solution_id == other.pk
    skipped.refresh_from_db()
    assert (skipped.assignment_count, skipped.is_open) == (0, True)


def test_it_returns_none_when_nothing_is_left():
    campaign = make_campaign(overlap=1)
    make_solution(campaign=campaign)
    queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign))
    assert queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign)) is None


def test_it_serves_screening_solutions_first_in_queue_order():
    campaign = make_campaign(requires_screening=True)
    make_solution(campaign=campaign, priority=9)
    s1 = make_gold_solution(campaign=campaign, kind="screening", gold=[1, 1], priority=1)
    s0 = make_gold_solution(campaign=campaign, kind="screening", gold=[1, -1], priority=2)
    s2 = make_gold_solution(campaign=campaign, kind="screening", gold=[1], priority=1)
    user = annotator_in(campaign)
    served = []
    for _ in range(3):
        assignment = queue.assignment_next(campaign=campaign, annotator=user)
        served.append(assignment.solution_id)
        gold = list(assignment.solution.steps.values_list("gold_rating", flat=True))
        submit_ratings(assignment=assignment, annotator=user, ratings=gold)
    assert served == [s0.pk, s1.pk, s2.pk]


def test_every_annotator_gets_the_screening_solutions_whatever_the_overlap():
    campaign = make_campaign(requires_screening=True, overlap=1)
    screening = make_gold_solution(campaign=campaign, kind="screening", gold=[1])
    for _ in range(3):
        assignment = queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign))
        assert assignment.solution_id == screening.pk


def test_it_serves_regular_work_once_screening_is_passed():
    campaign = make_campaign(requires_screening=True)
    regular = make_solution(campaign=campaign)
    make_gold_solution(campaign=campaign, kind="screening", gold=[1, 1])
    user = annotator_in(campaign, screening=Membership.Screening.PASSED)
    assert queue.assignment_next(campaign=campaign, annotator=user).solution_id == regular.pk


def test_it_serves_no_screening_when_the_campaign_does_not_require_it():
    campaign = make_campaign(requires_screening=False)
    regular = make_solution(campaign=campaign)
    make_gold_solution(campaign=campaign, kind="screening", gold=[1, 1], priority=5)
    user = annotator_in(campaign)
    assert queue.assignment_next(campaign=campaign, annotator=user).solution_id == regular.pk


def test_it_mixes_in_quality_control_at_the_campaign_rate():
    campaign = make_campaign(qc_rate=0.25, overlap=1)
    for _ in range(12):
        make_solution(campaign=campaign)
    qc = [make_gold_solution(campaign=campaign, kind="qc", gold=[1, 0, -1]) for _ in range(5)]
    user = annotator_in(campaign)
    kinds = []
    for _ in range(12):
        assignment = queue.assignment_next(campaign=campaign, annotator=user)
        kinds.append(assignment.solution.kind)
        submit_ratings(assignment=assignment, annotator=user, finish_reason="give_up")
    # One QC solution in every block of four (the rate, exactly); where in the block is drawn.
    assert [kinds[i : i + 4].count("qc") for i in (0, 4, 8)] == [1, 1, 1]
    assert kinds.count("regular") == 9
    served_qc = Assignment.objects.filter(annotator=user, solution__kind="qc")
    assert [a.solution_id for a in served_qc.order_by("pk")] == [s.pk for s in qc[:3]]


def test_quality_control_is_not_recognisable_by_its_position():
    campaign = make_campaign(qc_rate=0.25, overlap=50)
    for _ in range(4):
        make_solution(campaign=campaign)
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, 0, -1])
    positions = []
    for _ in range(12):
        user = annotator_in(campaign)
        kinds = []
        for _ in range(4):
            assignment = queue.assignment_next(campaign=campaign, annotator=user)
            kinds.append(assignment.solution.kind)
            submit_ratings(assignment=assignment, annotator=user, finish_reason="give_up")
        assert kinds.count("qc") == 1
        positions.append(kinds.index("qc"))
    assert len(set(positions)) > 1  # not always the 4th (12 draws of 4: all equal ~1e-6)
    # Stable for one annotator: asking again does not move their turn.
    user = annotator_in(campaign)
    assert queue.qc_turn(campaign=campaign, annotator=user) == queue.qc_turn(
        campaign=campaign, annotator=user
    )


def test_it_serves_regular_work_when_quality_control_runs_out():
    campaign = make_campaign(qc_rate=1.0)
    qc = make_gold_solution(campaign=campaign, kind="qc", gold=[1])
    regular = make_solution(campaign=campaign)
    user = annotator_in(campaign)
    first = queue.assignment_next(campaign=campaign, annotator=user)
    submit_ratings(assignment=first, annotator=user)
    second = queue.assignment_next(campaign=campaign, annotator=user)
    assert (first.solution_id, second.solution_id) == (qc.pk, regular.pk)


def test_quality_control_solutions_are_served_to_everyone_whatever_the_overlap():
    campaign = make_campaign(qc_rate=1.0, overlap=1)
    qc = make_gold_solution(campaign=campaign, kind="qc", gold=[1])
    for _ in range(3):
        assignment = queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign))
        assert assignment.solution_id == qc.pk
    qc.refresh_from_db()
    assert (qc.assignment_count, qc.is_open) == (3, True)


def test_it_refuses_a_paused_campaign():
    campaign = make_campaign(is_paused=True)
    make_solution(campaign=campaign)
    with pytest.raises(queue.CampaignPaused):
        queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign))


@pytest.mark.parametrize("status", [Membership.Status.PAUSED, Membership.Status.REMOVED])
def test_it_refuses_a_membership_that_is_not_active(status):
    campaign = make_campaign()
    make_solution(campaign=campaign)
    with pytest.raises(queue.MembershipInactive):
        queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign, status=status))
    assert not Assignment.objects.exists()


def test_it_refuses_someone_who_is_not_a_member():
    campaign = make_campaign()
    make_solution(campaign=campaign)
    other = make_campaign()
    with pytest.raises(queue.NotAMember):
        queue.assignment_next(campaign=campaign, annotator=annotator_in(other))


def test_it_refuses_an_annotator_who_failed_screening():
    campaign = make_campaign(requires_screening=True)
    make_solution(campaign=campaign)
    user = annotator_in(campaign, screening=Membership.Screening.FAILED)
    with pytest.raises(queue.ScreeningFailed):
        queue.assignment_next(campaign=campaign, annotator=user)


def test_it_does_not_serve_a_solution_reported_bad_too_often():
    campaign = make_campaign(overlap=3, bad_problem_limit=1)
    bad = make_solution(campaign=campaign)
    user = annotator_in(campaign)
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    submit_ratings(assignment=assignment, annotator=user, ratings=[], finish_reason="bad_problem")
    bad.refresh_from_db()
    assert (bad.bad_problem_reports, bad.is_open) == (1, False)
    assert queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign)) is None


def test_queue_order_follows_a_bulk_priority_rewrite():
    campaign = make_campaign(overlap=1)
    low, high = make_solution(campaign=campaign, priority=1), make_solution(campaign=campaign)
    Solution.objects.filter(pk=high.pk).update(priority=5)
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator_in(campaign))
    assert assignment.solution_id == high.pk != low.pk

"""Lease expiry: freed slots, late submissions (both outcomes), renewal, the sweep, recounts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from labeling import queue
from labeling.models import Assignment, Solution
from labeling.tasks import leases_sweep
from tests.factories import make_campaign, make_member, make_solution, submit_ratings

pytestmark = pytest.mark.django_db


def expire(assignment):
    """Move the lease's end into the past, as the clock would."""
    Assignment.objects.filter(pk=assignment.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assignment.refresh_from_db()


def member(campaign):
    return make_member(campaign=campaign).user


def test_an_expired_lease_frees_its_slot_for_another_annotator():
    campaign = make_campaign(overlap=1)
    solution = make_solution(campaign=campaign)
    first_user = member(campaign)
    first = queue.assignment_next(campaign=campaign, annotator=first_user)
    other = member(campaign)
    assert queue.assignment_next(campaign=campaign, annotator=other) is None
    expire(first)
    taken = queue.assignment_next(campaign=campaign, annotator=other)
    assert taken.solution_id == solution.pk
    first.refresh_from_db()
    assert first.status == Assignment.Status.EXPIRED
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (1, False)


def test_an_expired_lease_is_not_resumed_but_served_again_with_its_drafts():
    campaign = make_campaign(overlap=1)
    make_solution(campaign=campaign, steps=["a", "b"])
    user = member(campaign)
    first = queue.assignment_next(campaign=campaign, annotator=user)
    queue.step_label_set(assignment=first, annotator=user, step_index=0, rating=1)
    expire(first)
    again = queue.assignment_next(campaign=campaign, annotator=user)
    assert again.pk == first.pk
    assert again.status == "leased" and again.lease_expires_at > timezone.now()
    assert again.labels.get().rating == 1
    assert Assignment.objects.count() == 1


def test_a_late_submission_is_accepted_while_the_slot_is_free():
    campaign = make_campaign(overlap=1)
    solution = make_solution(campaign=campaign)
    user = member(campaign)
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    expire(assignment)
    assert queue.leases_reclaim(campaign=campaign) == 1
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (0, True)
    result = submit_ratings(assignment=assignment, annotator=user)
    assert result.status == "submitted"
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (1, False)


def test_a_late_submission_of_a_lease_not_yet_reclaimed_keeps_its_slot():
    campaign = make_campaign(overlap=1)
    solution = make_solution(campaign=campaign)
    user = member(campaign)
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    expire(assignment)
    submit_ratings(assignment=assignment, annotator=user)
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (1, False)
    assert queue.leases_reclaim(campaign=campaign) == 0


def test_a_late_submission_is_refused_once_the_slot_is_taken():
    campaign = make_campaign(overlap=1)
    solution = make_solution(campaign=campaign)
    late_user = member(campaign)
    late = queue.assignment_next(campaign=campaign, annotator=late_user)
    expire(late)
    queue.assignment_next(campaign=campaign, annotator=member(campaign))
    with pytest.raises(queue.LeaseTaken) as refused:
        submit_ratings(assignment=late, annotator=late_user)
    assert "another annotator" in str(refused.value)
    late.refresh_from_db()
    assert late.status == Assignment.Status.EXPIRED
    solution.refresh_from_db()
    assert solution.assignment_count == 1


def test_drafting_on_an_expired_lease_takes_the_free_slot_back_and_renews_the_lease():
    campaign = make_campaign(overlap=1, lease_seconds=300)
    solution = make_solution(campaign=campaign)
    user = member(campaign)
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    expire(assignment)
    queue.leases_reclaim(campaign=campaign)
    queue.step_label_set(assignment=assignment, annotator=user, step_index=0, rating=1)
    assignment.refresh_from_db()
    assert assignment.status == "leased"
    assert assignment.lease_expires_at > timezone.now() + timedelta(seconds=290)
    solution.refresh_from_db()
    assert solution.assignment_count == 1


def test_the_sweep_task_reclaims_expired_leases_of_every_campaign():
    leases = []
    for _ in range(2):
        campaign = make_campaign(overlap=1)
        make_solution(campaign=campaign)
        leases.append(queue.assignment_next(campaign=campaign, annotator=member(campaign)))
    for lease in leases:
        expire(lease)
    assert leases_sweep.apply().get() == 2
    assert set(Assignment.objects.values_list("status", flat=True)) == {"expired"}
    assert set(Solution.objects.values_list("assignment_count", "is_open")) == {(0, True)}


def test_refresh_queue_state_agrees_with_the_queue_counters():
    campaign = make_campaign(overlap=2)
    solutions = [make_solution(campaign=campaign) for _ in range(4)]
    for i in range(6):
        user = member(campaign)
        assignment = queue.assignment_next(campaign=campaign, annotator=user)
        if i % 3 == 0:
            submit_ratings(assignment=assignment, annotator=user)
        elif i % 3 == 1:
            submit_ratings(
                assignment=assignment, annotator=user, ratings=[], finish_reason="give_up"
            )
    queue.leases_reclaim(campaign=campaign)
    kept = list(Solution.objects.order_by("pk").values_list("assignment_count", "is_open"))
    Solution.objects.update(assignment_count=0, is_open=False)
    assert Solution.objects.filter(campaign=campaign).refresh_queue_state() == len(solutions)
    assert list(Solution.objects.order_by("pk").values_list("assignment_count", "is_open")) == kept
    for solution in Solution.objects.all():
        held = [a for a in solution.assignments.all() if a.holds_slot]
        assert solution.assignment_count == len(held)
        assert solution.is_open == (len(held) < 2)


def test_refresh_queue_state_releases_expired_leases_like_the_queue():
    campaign = make_campaign(overlap=1)
    solution = make_solution(campaign=campaign)
    assignment = queue.assignment_next(campaign=campaign, annotator=member(campaign))
    expire(assignment)
    Solution.objects.filter(is_open=False).refresh_queue_state()
    assignment.refresh_from_db()
    solution.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED
    assert (solution.assignment_count, solution.is_open) == (0, True)
    assert queue.leases_reclaim(campaign=campaign) == 0


def test_refresh_queue_state_counts_imported_bad_problem_reports():
    campaign = make_campaign(overlap=3, bad_problem_limit=2)
    solution = make_solution(campaign=campaign)
    for _ in range(2):
        Assignment.objects.create(
            campaign=campaign,
            solution=solution,
            annotator=member(campaign),
            status="submitted",
            finish_reason="bad_problem",
            source="prm800k",
        )
    Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    solution.refresh_from_db()
    assert (solution.bad_problem_reports, solution.assignment_count, solution.is_open) == (
        2,
        0,
        False,
    )

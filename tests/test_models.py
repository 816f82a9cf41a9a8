from __future__ import annotations

import pytest
from django.db import IntegrityError

from labeling.models import Assignment, Solution, StepLabel
from tests.factories import make_campaign, make_solution, make_user

pytestmark = pytest.mark.django_db


def test_it_rebuilds_prm800k_completions_with_the_steps_own_one_in_place():
    campaign = make_campaign()
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    assignment = Assignment.objects.create(
        campaign=campaign, solution=solution, annotator=make_user()
    )
    alt = [
        {"text": "x", "rating": 1, "flagged": False},
        {"text": "y", "rating": 0, "flagged": False},
    ]
    label = StepLabel.objects.create(
        assignment=assignment,
        step=solution.steps.get(index=1),
        rating=-1,
        flagged=None,
        completion_index=1,
        alternatives=alt,
    )
    assert label.completions("b") == [alt[0], {"text": "b", "rating": -1, "flagged": None}, alt[1]]


def test_it_refuses_the_same_solution_twice_in_a_campaign():
    campaign = make_campaign()
    solution = make_solution(campaign=campaign, steps=["a"])
    with pytest.raises(IntegrityError):
        Solution.objects.create(
            campaign=campaign, problem=solution.problem, content_hash=solution.content_hash
        )


def test_it_closes_a_solution_when_its_slots_are_taken_and_reopens_it_when_a_lease_expires():
    from datetime import timedelta

    from django.utils import timezone

    campaign = make_campaign(overlap=2)
    solution = make_solution(campaign=campaign)
    now = timezone.now()
    Assignment.objects.create(
        campaign=campaign, solution=solution, annotator=make_user(), status="submitted"
    )
    leased = Assignment.objects.create(
        campaign=campaign,
        solution=solution,
        annotator=make_user(),
        lease_expires_at=now + timedelta(minutes=5),
    )
    Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (2, False)

    leased.lease_expires_at = now - timedelta(seconds=1)
    leased.save()
    Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (1, True)

"""Step-by-step drafts for the labelling page: set, undo, flag, correction, and their refusals."""

from __future__ import annotations

import pytest

from labeling import queue
from labeling.models import StepLabel
from tests.factories import make_campaign, make_member, make_solution

pytestmark = pytest.mark.django_db


def leased(*, steps=4, **campaign_fields):
    campaign = make_campaign(**campaign_fields)
    make_solution(campaign=campaign, steps=[f"step {i}" for i in range(steps)])
    user = make_member(campaign=campaign).user
    return queue.assignment_next(campaign=campaign, annotator=user), user


def drafts(assignment):
    return list(
        StepLabel.objects.filter(assignment=assignment)
        .order_by("step__index")
        .values_list("step__index", "rating", "flagged")
    )


def rate(assignment, user, *ratings):
    for i, rating in enumerate(ratings):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=i, rating=rating)


def test_it_rates_steps_in_order_and_rates_one_again():
    assignment, user = leased()
    rate(assignment, user, 1, 0)
    queue.step_label_set(
        assignment=assignment, annotator=user, step_index=0, rating=0, flagged=True
    )
    assert drafts(assignment) == [(0, 0, True), (1, 0, False)]


def test_it_refuses_to_rate_ahead_of_the_next_step():
    assignment, user = leased()
    rate(assignment, user, 1)
    with pytest.raises(queue.LabelsInvalid) as refused:
        queue.step_label_set(assignment=assignment, annotator=user, step_index=2, rating=1)
    assert refused.value.field == "step_index"


@pytest.mark.parametrize("rating", [2, -2, None, "1"])
def test_it_refuses_a_rating_other_than_minus_one_zero_or_one(rating):
    assignment, user = leased()
    with pytest.raises(queue.LabelsInvalid):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=0, rating=rating)


def test_it_refuses_a_step_the_solution_does_not_have():
    assignment, user = leased(steps=2)
    rate(assignment, user, 1, 1)
    with pytest.raises(queue.LabelsInvalid) as refused:
        queue.step_label_set(assignment=assignment, annotator=user, step_index=2, rating=1)
    assert "no step 2" in str(refused.value)


def test_it_refuses_a_rating_after_a_negative_step_with_stop_at_first_error():
    assignment, user = leased()
    rate(assignment, user, 1, -1)
    with pytest.raises(queue.LabelsInvalid):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=2, rating=1)


def test_it_allows_a_rating_after_a_negative_step_without_stop_at_first_error():
    assignment, user = leased(stop_at_first_error=False)
    rate(assignment, user, 1, -1, 1)
    assert [r for _, r, _ in drafts(assignment)] == [1, -1, 1]


def test_a_step_with_later_ratings_cannot_turn_negative():
    assignment, user = leased()
    rate(assignment, user, 1, 1, 1)
    with pytest.raises(queue.LabelsInvalid):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=1, rating=-1)


def test_undo_removes_the_last_rating():
    assignment, user = leased()
    rate(assignment, user, 1, 0, -1)
    assert queue.step_label_undo(assignment=assignment, annotator=user) == 2
    assert drafts(assignment) == [(0, 1, False), (1, 0, False)]
    queue.step_label_undo(assignment=assignment, annotator=user)
    queue.step_label_undo(assignment=assignment, annotator=user)
    assert queue.step_label_undo(assignment=assignment, annotator=user) is None


def test_it_flags_and_unflags_a_rated_step_only():
    assignment, user = leased()
    rate(assignment, user, 1)
    queue.step_label_flag(assignment=assignment, annotator=user, step_index=0)
    assert drafts(assignment) == [(0, 1, True)]
    queue.step_label_flag(assignment=assignment, annotator=user, step_index=0, flagged=False)
    assert drafts(assignment) == [(0, 1, False)]
    with pytest.raises(queue.LabelsInvalid):
        queue.step_label_flag(assignment=assignment, annotator=user, step_index=1)


def test_a_correction_goes_on_a_negative_step_only_and_leaves_when_it_is_rerated():
    assignment, user = leased()
    rate(assignment, user, 1, -1)
    with pytest.raises(queue.LabelsInvalid):
        queue.step_label_human_completion(
            assignment=assignment, annotator=user, step_index=0, text="no"
        )
    queue.step_label_human_completion(
        assignment=assignment, annotator=user, step_index=1, text="  y = 3  "
    )
    assert StepLabel.objects.get(rating=-1).human_completion["text"] == "y = 3"
    queue.step_label_set(assignment=assignment, annotator=user, step_index=1, rating=0)
    assert StepLabel.objects.get(step__index=1).human_completion is None


def test_only_the_lease_holder_may_draft():
    assignment, _ = leased()
    intruder = make_member(campaign=assignment.campaign).user
    with pytest.raises(queue.NotLeaseHolder):
        queue.step_label_set(assignment=assignment, annotator=intruder, step_index=0, rating=1)
    with pytest.raises(queue.NotLeaseHolder):
        queue.step_label_undo(assignment=assignment, annotator=intruder)
    assert not StepLabel.objects.exists()


def test_a_finished_assignment_takes_no_more_drafts():
    assignment, user = leased(steps=1)
    rate(assignment, user, 1)
    queue.assignment_submit(assignment=assignment, annotator=user, submission_key="x")
    with pytest.raises(queue.AssignmentClosed):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=0, rating=0)

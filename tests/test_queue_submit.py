"""``assignment_submit`` and ``assignment_skip``: idempotency, finish reasons, every refusal."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from labeling import queue
from labeling.models import Assignment, Membership, StepLabel
from tests.factories import make_campaign, make_member, make_solution, make_user, submit_ratings

pytestmark = pytest.mark.django_db


def leased(campaign=None, *, steps=4, **campaign_fields):
    """A campaign with one solution of ``steps`` steps, leased to a new annotator."""
    campaign = campaign or make_campaign(**campaign_fields)
    make_solution(campaign=campaign, steps=[f"step {i}" for i in range(steps)])
    user = make_member(campaign=campaign).user
    return queue.assignment_next(campaign=campaign, annotator=user), user


def labels_of(assignment):
    return list(
        StepLabel.objects.filter(assignment=assignment)
        .order_by("step__index")
        .values_list("step__index", "rating", "flagged")
    )


def test_it_stores_the_ratings_and_finishes_the_assignment():
    assignment, user = leased()
    result = queue.assignment_submit(
        assignment=assignment,
        annotator=user,
        submission_key="k1",
        ratings=[1, 0, 1, 1],
        flags=[1],
        total_time_ms=42_000,
        step_times_ms=[1000, 2000, 3000, 4000],
    )
    assert (result.status, result.finish_reason, result.rated_steps) == ("submitted", "solution", 4)
    assignment.refresh_from_db()
    assert (assignment.status, assignment.total_time_ms, assignment.submission_key) == (
        "submitted",
        42_000,
        "k1",
    )
    assert labels_of(assignment) == [(0, 1, False), (1, 0, True), (2, 1, False), (3, 1, False)]
    assert assignment.submitted_at == result.submitted_at
    assert abs(timezone.now() - assignment.submitted_at) < timedelta(minutes=1)
    label = StepLabel.objects.filter(assignment=assignment).first()
    assert label.created_at == result.submitted_at
    assert (label.alternatives, label.completion_index, label.human_completion) == ([], 0, None)
    assert list(
        StepLabel.objects.filter(assignment=assignment)
        .order_by("step__index")
        .values_list("time_spent_ms", flat=True)
    ) == [1000, 2000, 3000, 4000]
    assignment.solution.refresh_from_db()
    assert assignment.solution.assignment_count == 1


def test_a_retry_with_the_same_key_changes_nothing_and_returns_the_same_result():
    assignment, user = leased()
    first = queue.assignment_submit(
        assignment=assignment, annotator=user, submission_key="same", ratings=[1, 1, -1]
    )
    retry = queue.assignment_submit(
        assignment=assignment, annotator=user, submission_key="same", ratings=[0, 0, 0, 0]
    )
    assert retry == first and retry.replayed and not first.replayed
    assert labels_of(assignment) == [(0, 1, False), (1, 1, False), (2, -1, False)]
    assert Assignment.objects.get().finish_reason == "found_error"


def test_it_refuses_a_submission_key_already_used_for_another_assignment():
    campaign = make_campaign(overlap=1)
    first, user = leased(campaign)
    submit_ratings(assignment=first, annotator=user, submission_key="dup")
    make_solution(campaign=campaign, steps=["a"])
    second = queue.assignment_next(campaign=campaign, annotator=user)
    with pytest.raises(queue.LabelsInvalid) as refused:
        submit_ratings(assignment=second, annotator=user, submission_key="dup", ratings=[1])
    assert refused.value.field == "submission_key"


def test_it_refuses_a_second_submission_with_another_key():
    assignment, user = leased()
    submit_ratings(assignment=assignment, annotator=user)
    with pytest.raises(queue.AssignmentClosed):
        submit_ratings(assignment=assignment, annotator=user)


def test_it_requires_a_submission_key():
    assignment, user = leased()
    with pytest.raises(queue.LabelsInvalid) as refused:
        submit_ratings(assignment=assignment, annotator=user, submission_key="")
    assert refused.value.field == "submission_key"


def test_only_the_lease_holder_may_submit():
    assignment, _ = leased()
    intruder = make_member(campaign=assignment.campaign).user
    with pytest.raises(queue.NotLeaseHolder):
        submit_ratings(assignment=assignment, annotator=intruder)
    assert Assignment.objects.get().status == "leased"


def test_a_removed_member_cannot_submit():
    assignment, user = leased()
    Membership.objects.filter(user=user).update(status=Membership.Status.REMOVED)
    with pytest.raises(queue.MembershipInactive):
        submit_ratings(assignment=assignment, annotator=user)


def test_it_derives_found_error_from_a_negative_step():
    assignment, user = leased()
    result = submit_ratings(assignment=assignment, annotator=user, ratings=[1, -1])
    assert result.finish_reason == "found_error"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"ratings": [1, 2, 1, 1]}, "ratings"),
        ({"ratings": [1, 1, 1, 1, 1]}, "ratings"),
        ({"ratings": [1, -1, 1]}, "ratings"),
        ({"ratings": [1, 1]}, "ratings"),
        ({"ratings": [1, -1], "finish_reason": "solution"}, "finish_reason"),
        ({"ratings": [1, 1, 1, 1], "finish_reason": "found_error"}, "finish_reason"),
        ({"ratings": [1, 1], "finish_reason": "done"}, "finish_reason"),
        ({"ratings": [1, 1, 1, 1], "flags": [4]}, "flags"),
        ({"ratings": [1, 1, 1, 1], "human_completion": "fix"}, "human_completion"),
        ({"ratings": [1, 1, 1, 1], "step_times_ms": [1, 2, 3, 4, 5]}, "step_times_ms"),
        ({"ratings": [1, 1, 1, 1], "step_times_ms": [1, -2]}, "step_times_ms"),
        ({"ratings": [1, 1, 1, 1], "total_time_ms": -1}, "total_time_ms"),
    ],
)
def test_it_refuses_labels_that_break_a_rule_and_names_the_field(fields, field):
    assignment, user = leased()
    with pytest.raises(queue.LabelsInvalid) as refused:
        submit_ratings(assignment=assignment, annotator=user, **fields)
    assert refused.value.field == field
    assert Assignment.objects.get().status == "leased"
    assert not StepLabel.objects.exists()


def test_it_accepts_steps_after_a_negative_when_stop_at_first_error_is_off():
    assignment, user = leased(stop_at_first_error=False)
    result = submit_ratings(assignment=assignment, annotator=user, ratings=[1, -1, 1, 0])
    assert (result.finish_reason, result.rated_steps) == ("found_error", 4)


def test_without_stop_at_first_error_found_error_needs_every_step():
    assignment, user = leased(stop_at_first_error=False)
    with pytest.raises(queue.LabelsInvalid):
        submit_ratings(assignment=assignment, annotator=user, ratings=[1, -1])


def test_it_stores_a_correction_of_the_negative_step_as_prm800k_does():
    assignment, user = leased()
    submit_ratings(
        assignment=assignment, annotator=user, ratings=[1, -1], human_completion="Better: x=2."
    )
    label = StepLabel.objects.get(rating=-1)
    assert label.human_completion == {
        "text": "Better: x=2.",
        "rating": None,
        "source": "human",
        "flagged": False,
    }
    assert label.chosen_completion is None
    assert StepLabel.objects.get(step__index=0).chosen_completion == 0


def test_it_submits_the_drafts_when_no_ratings_are_given():
    assignment, user = leased(steps=3)
    for i, rating in enumerate([1, 0, -1]):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=i, rating=rating)
    queue.step_label_human_completion(
        assignment=assignment, annotator=user, step_index=2, text="fixed"
    )
    result = queue.assignment_submit(assignment=assignment, annotator=user, submission_key="d")
    assert (result.finish_reason, result.rated_steps) == ("found_error", 3)
    assert labels_of(assignment) == [(0, 1, False), (1, 0, False), (2, -1, False)]
    assert StepLabel.objects.get(rating=-1).human_completion["text"] == "fixed"


def test_ratings_replace_the_drafts():
    assignment, user = leased(steps=2)
    queue.step_label_set(assignment=assignment, annotator=user, step_index=0, rating=-1)
    submit_ratings(assignment=assignment, annotator=user, ratings=[1, 1])
    assert labels_of(assignment) == [(0, 1, False), (1, 1, False)]


def test_give_up_keeps_the_labels_and_frees_the_slot_for_someone_else():
    campaign = make_campaign(overlap=1)
    assignment, user = leased(campaign)
    result = submit_ratings(
        assignment=assignment, annotator=user, ratings=[1], finish_reason="give_up"
    )
    assert (result.finish_reason, result.rated_steps) == ("give_up", 1)
    solution = assignment.solution
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (0, True)
    assert queue.assignment_next(campaign=campaign, annotator=user) is None
    other = make_member(campaign=campaign).user
    assert queue.assignment_next(campaign=campaign, annotator=other).solution_id == solution.pk


def test_a_solution_reported_as_a_bad_problem_by_enough_annotators_leaves_the_queue():
    campaign = make_campaign(overlap=3, bad_problem_limit=2)
    solution = make_solution(campaign=campaign)
    for _ in range(2):
        user = make_member(campaign=campaign).user
        assignment = queue.assignment_next(campaign=campaign, annotator=user)
        assert assignment.solution_id == solution.pk
        submit_ratings(
            assignment=assignment, annotator=user, ratings=[], finish_reason="bad_problem"
        )
    solution.refresh_from_db()
    assert (solution.bad_problem_reports, solution.assignment_count, solution.is_open) == (
        2,
        0,
        False,
    )
    assert (
        queue.assignment_next(campaign=campaign, annotator=make_member(campaign=campaign).user)
        is None
    )


def test_one_bad_problem_report_under_the_limit_keeps_the_solution_served():
    campaign = make_campaign(overlap=1, bad_problem_limit=2)
    assignment, user = leased(campaign)
    submit_ratings(assignment=assignment, annotator=user, ratings=[], finish_reason="bad_problem")
    other = make_member(campaign=campaign).user
    assert queue.assignment_next(campaign=campaign, annotator=other) is not None


def test_skip_frees_the_slot_and_drops_the_drafts():
    campaign = make_campaign(overlap=1)
    assignment, user = leased(campaign)
    queue.step_label_set(assignment=assignment, annotator=user, step_index=0, rating=1)
    skipped = queue.assignment_skip(assignment=assignment, annotator=user)
    assert skipped.status == "skipped"
    assert not StepLabel.objects.exists()
    assignment.solution.refresh_from_db()
    assert (assignment.solution.assignment_count, assignment.solution.is_open) == (0, True)
    assert queue.assignment_skip(assignment=assignment, annotator=user).status == "skipped"
    assignment.solution.refresh_from_db()
    assert assignment.solution.assignment_count == 0


def test_a_submitted_assignment_cannot_be_skipped_or_skipped_one_submitted():
    assignment, user = leased()
    submit_ratings(assignment=assignment, annotator=user)
    with pytest.raises(queue.AssignmentClosed):
        queue.assignment_skip(assignment=assignment, annotator=user)
    other, other_user = leased()
    queue.assignment_skip(assignment=other, annotator=other_user)
    with pytest.raises(queue.AssignmentClosed):
        submit_ratings(assignment=other, annotator=other_user)


def test_only_the_holder_may_skip():
    assignment, _ = leased()
    with pytest.raises(queue.NotLeaseHolder):
        queue.assignment_skip(assignment=assignment, annotator=make_user())

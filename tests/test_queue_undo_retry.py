"""``step_label_undo`` with the step the page showed: a retried undo removes nothing more."""

from __future__ import annotations

import pytest

from labeling import queue
from labeling.models import StepLabel
from tests.factories import make_campaign, make_member, make_solution

pytestmark = pytest.mark.django_db


def rated(steps: int, *ratings: int):
    campaign = make_campaign()
    make_solution(campaign=campaign, steps=[f"step {i}" for i in range(steps)])
    user = make_member(campaign=campaign).user
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    for i, rating in enumerate(ratings):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=i, rating=rating)
    return assignment, user


def indexes(assignment):
    return sorted(
        StepLabel.objects.filter(assignment=assignment).values_list("step__index", flat=True)
    )


def test_it_undoes_the_named_step_while_it_is_the_last_one():
    assignment, user = rated(3, 1, 0)
    undone = queue.step_label_undo(assignment=assignment, annotator=user, step_index=1)
    assert undone == 1
    assert indexes(assignment) == [0]


def test_a_retry_finds_the_step_gone_and_undoes_nothing():
    assignment, user = rated(3, 1, 0)
    queue.step_label_undo(assignment=assignment, annotator=user, step_index=1)
    assert queue.step_label_undo(assignment=assignment, annotator=user, step_index=1) is None
    assert indexes(assignment) == [0]


def test_without_a_step_it_undoes_whatever_is_last():
    assignment, user = rated(3, 1, 0)
    assert queue.step_label_undo(assignment=assignment, annotator=user) == 1
    assert queue.step_label_undo(assignment=assignment, annotator=user) == 0
    assert queue.step_label_undo(assignment=assignment, annotator=user) is None

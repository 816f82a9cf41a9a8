"""A submission from the labelling page carries the ratings the page showed (``drafts_seen``):
stored only while they are the saved drafts, else refused with the difference (two tabs)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling import queue
from labeling.models import Assignment, StepLabel
from tests.factories import make_campaign, make_member, make_solution

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def leased(client):
    campaign = make_campaign(slug="tabs")
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_solution(campaign=campaign, steps=["next"])
    user = make_member(campaign=campaign).user
    client.force_login(user)
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    for index in range(3):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=index, rating=1)
    return assignment, user


def submit(client, assignment, **data):
    url = reverse("labeling:submit", kwargs={"slug": assignment.campaign.slug, "pk": assignment.pk})
    key = f"web-{assignment.pk}-{assignment.solution_id}"
    return client.post(url, {"submission_key": key, **data}, **HX)


def test_the_version_lists_each_rated_step_with_its_flag():
    assert queue.drafts_version([(1, 0, True), (0, 1, False), (2, None, False)]) == "0:1,1:0f"
    assert queue.drafts_version([]) == ""


@pytest.mark.usefixtures("leased")
def test_the_page_carries_the_version_of_what_it_shows(client):
    html = client.get(reverse("labeling:label", kwargs={"slug": "tabs"})).content.decode()
    assert 'name="drafts_seen" value="0:1,1:1,2:1"' in html


def test_a_submit_whose_page_showed_other_ratings_is_refused_with_the_difference(client, leased):
    assignment, user = leased
    queue.step_label_set(assignment=assignment, annotator=user, step_index=0, rating=0)
    response = submit(client, assignment, drafts_seen="0:1,1:1,2:1")
    assert response.status_code == 409
    assert response["HX-Retarget"] == "#steps"
    html = response.content.decode()
    assert "changed in another tab or window" in html
    assert "Step 1: this page showed +1 positive; saved: 0 neutral." in html
    assert 'name="drafts_seen" value="0:0,1:1,2:1"' in html  # the page now shows the saved ones
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.LEASED


def test_flags_and_missing_steps_are_differences_too(client, leased):
    assignment, user = leased
    queue.step_label_undo(assignment=assignment, annotator=user, step_index=2)
    queue.step_label_flag(assignment=assignment, annotator=user, step_index=1)
    response = submit(client, assignment, drafts_seen="0:1,1:1,2:1", finish_reason="give_up")
    html = response.content.decode()
    assert response.status_code == 409
    assert "Step 2: this page showed +1 positive; saved: +1 positive (unsure)." in html
    assert "Step 3: this page showed +1 positive; it is not rated now." in html


def test_a_submit_of_what_the_page_shows_is_stored(client, leased):
    assignment, _ = leased
    response = submit(client, assignment, drafts_seen="0:1,1:1,2:1")
    assert response.status_code == 200
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert list(
        StepLabel.objects.filter(assignment=assignment).values_list("rating", flat=True)
    ) == [1, 1, 1]


def test_a_form_without_the_version_and_a_replay_submit_as_before(client, leased):
    assignment, user = leased
    queue.step_label_set(assignment=assignment, annotator=user, step_index=0, rating=0)
    assert submit(client, assignment).status_code == 200  # posted by hand: the drafts
    # A retry of a submission that was stored is replayed whatever its page showed.
    assert submit(client, assignment, drafts_seen="0:1").status_code == 200
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED

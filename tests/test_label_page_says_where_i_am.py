"""The labelling page says where I am: the campaign's progress, my work in this session, and
which steps are missing when I submit too early."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from labeling.models import Assignment
from labeling.views import SESSION_SINCE
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def campaign():
    return make_campaign(slug="where", overlap=2)


@pytest.fixture
def annotator(campaign, client):
    user = make_member(campaign=campaign).user
    client.force_login(user)
    return user


def label_url(campaign):
    return reverse("labeling:label", kwargs={"slug": campaign.slug})


def action_url(name, assignment):
    return reverse(
        f"labeling:{name}", kwargs={"slug": assignment.campaign.slug, "pk": assignment.pk}
    )


def text(response) -> str:
    return " ".join(response.content.decode().split())


def test_it_shows_solutions_done_of_wanted(client, campaign, annotator):
    done = make_solution(campaign=campaign, steps=["a"])
    half = make_solution(campaign=campaign, steps=["a"])
    gave_up = make_solution(campaign=campaign, steps=["a"])
    make_solution(campaign=campaign, steps=["a"])  # open, served to the annotator
    make_labelled(solution=done, ratings=[1])
    make_labelled(solution=done, ratings=[1])
    make_labelled(solution=half, ratings=[1])
    make_labelled(solution=gave_up, ratings=[1])
    make_labelled(solution=gave_up, ratings=[1], finish_reason="give_up")

    response = client.get(label_url(campaign))

    # Overlap 2: only ``done`` has two labellings that count (a give-up releases its slot).
    assert "Campaign: <strong>1</strong> of 4 solutions done" in text(response)


def test_it_counts_my_submissions_and_their_time_since_i_opened_the_page(
    client, campaign, annotator
):
    earlier = make_solution(campaign=campaign, steps=["a"])
    make_labelled(
        solution=earlier,
        ratings=[1],
        annotator=annotator,
        submitted_at=timezone.now() - timedelta(hours=2),
        total_time_ms=600_000,
    )
    make_solution(campaign=campaign, steps=["a", "b"])
    make_solution(campaign=campaign, steps=["c"])

    first = client.get(label_url(campaign))
    assert "<strong>0</strong> solutions" in text(first)  # the earlier work is not this session
    assignment = Assignment.objects.get(annotator=annotator, status="leased")
    for index in (0, 1):
        client.post(action_url("rate", assignment), {"step_index": index, "rating": 1}, **HX)
    response = client.post(
        action_url("submit", assignment),
        {
            "submission_key": f"web-{assignment.pk}-{assignment.solution_id}",
            "total_time_ms": 150_000,
        },
        **HX,
    )

    assert response.status_code == 200
    page = text(response)
    assert "<strong>1</strong> solution, 2 steps in 2 min" in page  # 150 s rounds to 2 min
    assert "Submitted." in page


def test_the_session_starts_again_after_logging_in_again(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a"])
    client.get(label_url(campaign))
    assert str(campaign.pk) in client.session[SESSION_SINCE]

    client.logout()
    client.force_login(annotator)

    assert SESSION_SINCE not in client.session


def test_it_counts_only_my_own_work(client, campaign, annotator):
    other = make_user()
    make_member(campaign=campaign, user=other)
    client.get(label_url(campaign))
    make_labelled(
        solution=make_solution(campaign=campaign, steps=["a"]), ratings=[1], annotator=other
    )

    response = client.get(label_url(campaign))

    assert "<strong>0</strong> solutions" in text(response)


def test_submitting_too_early_names_the_missing_steps(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b", "c", "d"])
    client.get(label_url(campaign))
    assignment = Assignment.objects.get(annotator=annotator)
    client.post(action_url("rate", assignment), {"step_index": 0, "rating": 1}, **HX)

    response = client.post(action_url("submit", assignment), {"submission_key": "early"}, **HX)

    assert response.status_code == 400
    assert "steps 2 to 4 are not rated yet" in text(response)
    assert Assignment.objects.get().status == "leased"


def test_the_page_carries_the_missing_steps_message_for_enter(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b"])
    client.get(label_url(campaign))
    assignment = Assignment.objects.get(annotator=annotator)

    response = client.post(action_url("rate", assignment), {"step_index": 0, "rating": 0}, **HX)

    page = text(response)
    assert "data-missing hidden" in page
    assert "step 2 is not rated yet" in page


def test_the_no_javascript_submit_says_it_once_and_then_it_is_gone(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a"])
    make_solution(campaign=campaign, steps=["b"])
    client.get(label_url(campaign))
    assignment = Assignment.objects.get(annotator=annotator)
    client.post(action_url("rate", assignment), {"step_index": 0, "rating": 1})
    client.post(
        action_url("submit", assignment),
        {"submission_key": f"web-{assignment.pk}-{assignment.solution_id}"},
    )

    assert "Submitted." in text(client.get(label_url(campaign)))
    assert "Submitted." not in text(client.get(label_url(campaign)))


def test_today_and_this_session_agree_after_a_rejection_and_count_written_steps(
    client, campaign, annotator
):
    """Rejected work was submitted all the same: both counters count it; a phase 1 step the
    annotator wrote (no rating of its own, a correction) is a step done."""
    make_solution(campaign=campaign, steps=["x"])  # served
    client.get(label_url(campaign))  # the session starts
    rejected = make_labelled(
        solution=make_solution(campaign=campaign, steps=["a", "b"]),
        ratings=[1, 1],
        annotator=annotator,
        status="rejected",
    )
    make_labelled(
        solution=make_solution(campaign=campaign, steps=["a", "b", "c"]),
        ratings=[1, None],
        human_completions={1: "my own step"},
        annotator=annotator,
    )
    assert rejected.status == "rejected"

    page = text(client.get(label_url(campaign)))

    assert "You today: <strong>2</strong> solutions, 4 steps" in page
    assert "<strong>2</strong> solutions, 4 steps in" in page.split('id="session-work"')[1]

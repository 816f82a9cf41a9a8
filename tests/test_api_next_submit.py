"""The two queue endpoints: POST /api/campaigns/<slug>/next/ and /api/assignments/<id>/submit/."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from labeling.models import Assignment, Membership, StepLabel
from tests.factories import (
    api_client_for,
    make_campaign,
    make_gold_solution,
    make_member,
    make_solution,
    make_user,
    submit_ratings,
)

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    return api_client_for(user)


def next_url(campaign):
    return f"/api/campaigns/{campaign.slug}/next/"


def submit_url(assignment_id):
    return f"/api/assignments/{assignment_id}/submit/"


@pytest.fixture
def campaign():
    return make_campaign(overlap=2, lease_seconds=900, instructions="Rate *every* step.")


@pytest.fixture
def annotator(campaign):
    return make_member(campaign=campaign).user


def test_next_returns_the_problem_steps_and_lease(campaign, annotator):
    solution = make_solution(campaign=campaign, steps=["First $x$.", "Then <b>y</b>."])
    response = client_for(annotator).post(next_url(campaign))
    assert response.status_code == 200
    body = response.json()
    assignment = body["assignment"]
    assert body["reason"] is None
    assert assignment["solution"] == solution.pk
    assert assignment["problem"] == {
        "text": solution.problem.text,
        "ground_truth_answer": solution.problem.ground_truth_answer,
    }
    assert assignment["steps"] == [
        {"index": 0, "text": "First $x$."},
        {"index": 1, "text": "Then <b>y</b>."},
    ]
    assert assignment["labels"] == []
    assert assignment["lease_expires_at"]
    assert assignment["stop_at_first_error"] is True
    assert assignment["instructions"] == "Rate *every* step."
    assert assignment["submit_url"] == submit_url(assignment["id"])


def test_next_resumes_with_the_steps_already_labelled(campaign, annotator):
    from labeling import queue

    make_solution(campaign=campaign, steps=["a", "b", "c"])
    client = client_for(annotator)
    first = client.post(next_url(campaign)).json()["assignment"]
    assignment = Assignment.objects.get(pk=first["id"])
    queue.step_label_set(assignment=assignment, annotator=annotator, step_index=0, rating=1)
    queue.step_label_set(
        assignment=assignment, annotator=annotator, step_index=1, rating=0, flagged=True
    )
    again = client.post(next_url(campaign)).json()["assignment"]
    assert again["id"] == first["id"]
    assert [(x["step_index"], x["rating"], x["flagged"]) for x in again["labels"]] == [
        (0, 1, False),
        (1, 0, True),
    ]


def test_next_never_shows_gold_ratings_or_that_a_solution_is_quality_control(annotator):
    campaign = Membership.objects.get(user=annotator).campaign
    campaign.qc_rate = 1.0
    campaign.save()
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1])
    response = client_for(annotator).post(next_url(campaign))
    text = response.content.decode()
    assert "gold" not in text and '"qc"' not in text and "quality" not in text
    assert response.json()["assignment"]["is_screening"] is False


def test_next_never_shows_other_annotators_labels(campaign, annotator):
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    other = make_member(campaign=campaign).user
    from labeling import queue

    theirs = queue.assignment_next(campaign=campaign, annotator=other)
    submit_ratings(assignment=theirs, annotator=other, ratings=[-1])
    body = client_for(annotator).post(next_url(campaign)).json()["assignment"]
    assert body["solution"] == solution.pk
    assert body["labels"] == []


def test_next_answers_200_with_a_reason_when_there_is_no_work(campaign, annotator):
    response = client_for(annotator).post(next_url(campaign))
    assert response.status_code == 200
    assert response.json()["assignment"] is None
    assert response.json()["reason"] == "done"


def test_next_says_to_come_back_when_others_hold_the_remaining_solutions(annotator):
    campaign = Membership.objects.get(user=annotator).campaign
    campaign.overlap = 1
    campaign.save()
    make_solution(campaign=campaign)
    client_for(make_member(campaign=campaign).user).post(next_url(campaign))
    body = client_for(annotator).post(next_url(campaign)).json()
    assert body["assignment"] is None
    assert body["reason"] == "all_leased"
    assert 0 < body["retry_after"] <= 901


def test_next_is_404_for_non_members_and_unknown_campaigns(campaign):
    make_solution(campaign=campaign)
    outsider = client_for(make_user())
    assert outsider.post(next_url(campaign)).status_code == 404
    assert outsider.post("/api/campaigns/nope/next/").status_code == 404
    assert not Assignment.objects.exists()


def test_next_needs_authentication(campaign):
    assert APIClient().post(next_url(campaign)).status_code in (401, 403)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"campaign": {"is_paused": True}}, "campaign_paused"),
        ({"membership": {"status": "paused"}}, "membership_inactive"),
        (
            {"membership": {"screening": "failed"}, "campaign": {"requires_screening": True}},
            "screening_failed",
        ),
    ],
)
def test_next_refuses_with_403_and_says_why(campaign, annotator, change, code):
    make_solution(campaign=campaign)
    for name, value in change.get("campaign", {}).items():
        setattr(campaign, name, value)
    campaign.save()
    Membership.objects.filter(user=annotator).update(**change.get("membership", {}))
    response = client_for(annotator).post(next_url(campaign))
    assert response.status_code == 403
    assert response.json()["code"] == code
    assert response.json()["detail"]


def test_next_works_with_a_session_and_csrf(campaign, annotator):
    make_solution(campaign=campaign)
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(annotator)
    assert client.post(next_url(campaign)).status_code == 403  # no CSRF token
    client.get("/login/")
    token = client.cookies["csrftoken"].value
    response = client.post(next_url(campaign), HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200
    assert response.json()["assignment"] is not None


def leased(campaign, annotator, steps=3):
    make_solution(campaign=campaign, steps=[f"s{i}" for i in range(steps)])
    client = client_for(annotator)
    return client, client.post(next_url(campaign)).json()["assignment"]


def test_submit_stores_the_labels_and_returns_the_result(campaign, annotator):
    client, assignment = leased(campaign, annotator)
    body = {
        "submission_key": "a1",
        "ratings": [1, 0, -1],
        "flags": [1],
        "human_completion": "It should be 4.",
        "total_time_ms": 30_000,
        "step_times_ms": [5000, 10000, 15000],
    }
    response = client.post(submit_url(assignment["id"]), body, format="json")
    assert response.status_code == 200
    result = response.json()
    assert {k: result[k] for k in ("assignment", "status", "finish_reason", "rated_steps")} == {
        "assignment": assignment["id"],
        "status": "submitted",
        "finish_reason": "found_error",
        "rated_steps": 3,
    }
    labels = StepLabel.objects.filter(assignment_id=assignment["id"]).order_by("step__index")
    assert [(x.rating, x.flagged, x.time_spent_ms) for x in labels] == [
        (1, False, 5000),
        (0, True, 10000),
        (-1, False, 15000),
    ]
    assert labels[2].human_completion["text"] == "It should be 4."


def test_submit_retry_with_the_same_key_returns_the_same_result(campaign, annotator):
    client, assignment = leased(campaign, annotator)
    body = {"submission_key": "same", "ratings": [1, 1, 1]}
    first = client.post(submit_url(assignment["id"]), body, format="json")
    retry = client.post(submit_url(assignment["id"]), body, format="json")
    assert (first.status_code, retry.status_code) == (200, 200)
    assert retry.json() == first.json()
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert StepLabel.objects.count() == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ratings": [1, 1, 1]}, "submission_key"),
        ({"submission_key": "k", "ratings": [1, 5, 1]}, "ratings"),
        ({"submission_key": "k", "ratings": "good"}, "ratings"),
        ({"submission_key": "k", "ratings": [1, -1, 1]}, "ratings"),
        ({"submission_key": "k", "ratings": [1, 1]}, "ratings"),
        ({"submission_key": "k", "ratings": [1, 1, 1], "finish_reason": "tired"}, "finish_reason"),
        ({"submission_key": "k", "ratings": [1, 1, 1], "flags": [7]}, "flags"),
        ({"submission_key": "k", "ratings": [1, 1, 1], "total_time_ms": -5}, "total_time_ms"),
        (
            {"submission_key": "k", "ratings": [1, 1, 1], "human_completion": "x"},
            "human_completion",
        ),
        ({"submission_key": "k" * 65, "ratings": [1, 1, 1]}, "submission_key"),
    ],
)
def test_submit_answers_400_naming_the_field(campaign, annotator, body, field):
    client, assignment = leased(campaign, annotator)
    response = client.post(submit_url(assignment["id"]), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert Assignment.objects.get().status == "leased"


def test_submit_is_404_for_someone_elses_assignment(campaign, annotator):
    _, assignment = leased(campaign, annotator)
    for intruder in (make_member(campaign=campaign).user, make_user()):
        response = client_for(intruder).post(
            submit_url(assignment["id"]),
            {"submission_key": "k", "ratings": [1, 1, 1]},
            format="json",
        )
        assert response.status_code == 404
    assert Assignment.objects.get().status == "leased"
    assert (
        client_for(annotator).post(submit_url(999999), {"submission_key": "k"}).status_code == 404
    )


def test_a_superuser_may_read_but_not_submit_someone_elses_assignment(campaign, annotator):
    _, assignment = leased(campaign, annotator)
    admin = make_user(is_superuser=True, is_staff=True)
    client = client_for(admin)
    assert client.get(f"/api/assignments/{assignment['id']}/").status_code == 200
    response = client.post(
        submit_url(assignment["id"]), {"submission_key": "k", "ratings": [1, 1, 1]}, format="json"
    )
    assert response.status_code == 404
    assert Assignment.objects.get().status == "leased"


def test_submit_is_409_when_the_expired_slot_was_taken(campaign, annotator):
    from datetime import timedelta

    from django.utils import timezone

    campaign.overlap = 1
    campaign.save()
    client, assignment = leased(campaign, annotator)
    Assignment.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    client_for(make_member(campaign=campaign).user).post(next_url(campaign))
    response = client.post(
        submit_url(assignment["id"]),
        {"submission_key": "late", "ratings": [1, 1, 1]},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["code"] == "lease_taken"


def test_skip_endpoint_releases_the_solution(campaign, annotator):
    client, assignment = leased(campaign, annotator)
    response = client.post(f"/api/assignments/{assignment['id']}/skip/")
    assert response.status_code == 200
    assert response.json() == {"assignment": assignment["id"], "status": "skipped"}
    assert client.post(next_url(campaign)).json()["assignment"] is None


def test_a_wrong_token_or_an_inactive_user_is_refused(campaign, annotator):
    make_solution(campaign=campaign)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    response = client.post(next_url(campaign))
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."
    inactive = client_for(annotator)
    annotator.is_active = False
    annotator.save()
    assert inactive.post(next_url(campaign)).status_code == 401
    assert not Assignment.objects.exists()

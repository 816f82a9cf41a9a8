"""What members who stepped away may still do, and what creating a campaign tells about others'."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling import queue
from labeling.models import Assignment, Membership, StepLabel
from tests.factories import api_client_for, make_campaign, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db


def _held():
    campaign = make_campaign(slug="held")
    make_solution(campaign=campaign, steps=["a", "b"])
    membership = make_member(campaign=campaign)
    assignment = queue.assignment_next(campaign=campaign, annotator=membership.user)
    return campaign, membership, assignment


def test_a_paused_member_cannot_take_up_held_work():
    campaign, membership, assignment = _held()
    Membership.objects.filter(pk=membership.pk).update(status=Membership.Status.PAUSED)
    with pytest.raises(queue.MembershipInactive):
        queue.assignment_next(campaign=campaign, annotator=membership.user)
    api = api_client_for(membership.user)
    submit = api.post(
        f"/api/assignments/{assignment.pk}/submit/",
        {"submission_key": "p", "ratings": [1, 1]},
        format="json",
    )
    assert submit.status_code == 403 and submit.json()["code"] == "membership_inactive"
    with pytest.raises(queue.MembershipInactive):
        queue.step_label_set(
            assignment=assignment, annotator=membership.user, step_index=0, rating=1
        )
    assert not StepLabel.objects.exists()
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.LEASED


def test_a_removed_member_loses_access_to_their_assignments(client):
    _, membership, assignment = _held()
    user = membership.user
    api = api_client_for(user)
    assert api.get(f"/api/assignments/{assignment.pk}/").status_code == 200
    Membership.objects.filter(pk=membership.pk).update(status=Membership.Status.REMOVED)
    gone = api.get(f"/api/assignments/{assignment.pk}/")
    assert gone.status_code == 403 and gone.json()["code"] == "membership_inactive"
    submit = api.post(
        f"/api/assignments/{assignment.pk}/submit/",
        {"submission_key": "r", "ratings": [1, 1]},
        format="json",
    )
    assert submit.status_code == 403
    client.force_login(user)
    rate = client.post(
        reverse("labeling:rate", kwargs={"slug": "held", "pk": assignment.pk}),
        {"step_index": 0, "rating": 1},
    )
    assert rate.status_code == 403
    assert not StepLabel.objects.exists()


def test_creating_a_campaign_tells_nothing_about_campaigns_one_cannot_see(client):
    make_campaign(slug="secret-project")
    client.force_login(make_user())
    data = {
        "name": "Mine",
        "overlap": 1,
        "lease_seconds": 600,
        "stop_at_first_error": "on",
        "qc_rate": 0.0,
        "screening_threshold": 0.75,
        "bad_problem_limit": 3,
        "al_wrong_answer_share": 0.8,
        "al_retrain_every": 100,
        "al_backbone": "bow",
    }
    create = reverse("labeling:campaign-create")
    taken = client.post(create, data | {"slug": "secret-project"}).content.decode()
    reserved = client.post(create, data | {"slug": "new"}).content.decode()
    message = "is taken or reserved; choose another."
    assert f"&#x27;secret-project&#x27; {message}" in taken
    assert f"&#x27;new&#x27; {message}" in reserved
    api = api_client_for(make_user())
    answer = api.post("/api/campaigns/", {"name": "X", "slug": "secret-project"}, format="json")
    assert answer.json()["slug"] == [f"The slug 'secret-project' {message}"]

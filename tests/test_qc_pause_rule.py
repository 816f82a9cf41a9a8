"""The campaign's QC pause rule, with simulated raters driven through the API as annotators.

The quality-control set is 30 solutions built from the demo's PRM800K phase 1 trajectories
(real human ratings cut at the first negative step: ``bench.gold_scores.prm800k_gold``), served
at a QC rate of 1. Each rater asks for work (``next``) and submits ratings up to their first -1,
as the labelling page makes them. With the rule on (its defaults: the last 20 answers under
0.25) a careless rater is paused at their 20th QC answer and told why; a careful one (gold with
10% of the steps changed) keeps working through all 30; with the rule off nobody is paused.
``bench/qc_pause.py`` gives the shares over many simulated annotators.
"""

from __future__ import annotations

import random

import pytest
from django.urls import reverse
from django.utils.html import escape

from bench.gold_scores import constant, noisy, prm800k_gold, uniform
from labeling.models import Assignment, Campaign, Membership
from labeling.models.campaigns import QC_PAUSE_THRESHOLD_DEFAULT, QC_PAUSE_WINDOW_DEFAULT
from labeling.queue import MembershipInactive
from tests.factories import api_client_for, make_campaign, make_gold_solution, make_member

pytestmark = pytest.mark.django_db

CARELESS = {"always +1": constant(1), "always 0": constant(0), "uniform random": uniform}


def qc_campaign(**fields) -> tuple[Campaign, dict[int, list]]:
    campaign = make_campaign(overlap=10, qc_rate=1.0, **fields)
    gold = {}
    for steps, ratings in prm800k_gold():
        # Phase 1 gold cut at the first error rates every step: no None in ``ratings``.
        solution = make_gold_solution(
            campaign=campaign,
            kind="qc",
            gold=ratings,  # type: ignore[arg-type]
            steps=steps,
        )
        gold[solution.pk] = ratings
    return campaign, gold


def work_through(campaign, gold, rater, *, membership=None, seed=1) -> tuple[Membership, dict]:
    """Answer what the API serves with ``rater`` until it serves nothing or refuses; the
    membership afterwards and the last ``next`` answer."""
    membership = membership or make_member(campaign=campaign)
    client = api_client_for(membership.user)
    rng = random.Random(seed)
    while True:
        answer = client.post(f"/api/campaigns/{campaign.slug}/next/")
        body = answer.json()
        if answer.status_code != 200 or body["assignment"] is None:
            break
        served = body["assignment"]
        response = client.post(
            served["submit_url"],
            {"submission_key": f"k{served['id']}", "ratings": rater(gold[served["solution"]], rng)},
            format="json",
        )
        assert response.status_code == 200, response.json()
    membership.refresh_from_db()
    return membership, {"status": answer.status_code} | body


def qc_answers(membership: Membership) -> int:
    return Assignment.objects.filter(
        annotator_id=membership.user_id, status=Assignment.Status.SUBMITTED
    ).count()


def test_the_rule_is_off_by_default_with_sane_settings():
    campaign = make_campaign()
    assert campaign.qc_pause is False
    assert campaign.qc_pause_window == QC_PAUSE_WINDOW_DEFAULT == 20
    assert campaign.qc_pause_threshold == QC_PAUSE_THRESHOLD_DEFAULT == 0.25


@pytest.mark.parametrize("rater", CARELESS)
def test_a_careless_rater_is_paused_after_n_qc_questions(rater):
    campaign, gold = qc_campaign(qc_pause=True)
    membership, last = work_through(campaign, gold, CARELESS[rater])

    assert membership.status == Membership.Status.PAUSED
    assert qc_answers(membership) == campaign.qc_pause_window
    assert membership.pause_figures["questions"] == 20
    assert membership.pause_figures["score"] < campaign.qc_pause_threshold
    assert membership.paused_at is not None
    assert last["status"] == 403 and last["code"] == "membership_inactive"
    assert "quality-control questions" in last["detail"]
    assert f"{membership.pause_figures['score']:.2f}" in last["detail"]


def test_a_careful_rater_is_not_paused():
    campaign, gold = qc_campaign(qc_pause=True)
    membership, last = work_through(campaign, gold, noisy(0.1))
    assert membership.status == Membership.Status.ACTIVE
    assert qc_answers(membership) == len(gold)
    assert last["status"] == 200 and last["assignment"] is None


def test_with_the_rule_off_nobody_is_paused():
    campaign, gold = qc_campaign()
    membership, _ = work_through(campaign, gold, constant(1))
    assert membership.status == Membership.Status.ACTIVE
    assert qc_answers(membership) == len(gold)


def test_managers_and_reviewers_are_never_paused():
    campaign, gold = qc_campaign(qc_pause=True)
    for role in (Membership.Role.MANAGER, Membership.Role.REVIEWER):
        member = make_member(campaign=campaign, role=role, screening="passed")
        member, _ = work_through(campaign, gold, constant(1), membership=member)
        assert member.status == Membership.Status.ACTIVE, role
        assert qc_answers(member) == len(gold)


def test_a_resumed_annotator_starts_a_fresh_window(client):
    campaign, gold = qc_campaign(qc_pause=True, qc_pause_window=10)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER)
    membership, _ = work_through(campaign, gold, constant(1))
    assert membership.status == Membership.Status.PAUSED

    client.force_login(manager.user)
    url = reverse("annotators:member", kwargs={"slug": campaign.slug, "pk": membership.pk})
    client.post(url, {"role": "annotator", "status": "active"})
    membership.refresh_from_db()
    assert membership.status == Membership.Status.ACTIVE and membership.resumed_at is not None

    # Their ten old answers no longer count: ten new careless ones pause them again.
    membership, _ = work_through(campaign, gold, constant(1), membership=membership)
    assert membership.status == Membership.Status.PAUSED
    assert qc_answers(membership) == 2 * campaign.qc_pause_window


def test_the_paused_annotator_is_told_why_on_home_and_the_labelling_page(client):
    campaign, gold = qc_campaign(qc_pause=True, name="Careful maths")
    membership, _ = work_through(campaign, gold, constant(0))
    reason = membership.pause_reason
    assert "quality-control questions" in reason

    client.force_login(membership.user)
    home = client.get(reverse("home")).content.decode()
    assert 'id="my-pauses"' in home and "Careful maths" in home
    assert escape(reason) in home
    page = client.get(reverse("labeling:label", kwargs={"slug": campaign.slug}))
    assert page.status_code == 200
    html = page.content.decode()
    assert escape(reason) in html and "until a campaign manager resumes you" in html


def test_the_labelling_page_says_it_right_after_the_pausing_submission(client):
    """The htmx submit answers with the next workspace: for the pausing QC answer, the reason."""
    campaign, gold = qc_campaign(qc_pause=True, qc_pause_window=1)
    membership = make_member(campaign=campaign)
    client.force_login(membership.user)
    label = reverse("labeling:label", kwargs={"slug": campaign.slug})
    client.get(label)
    assignment = Assignment.objects.get(annotator=membership.user)
    n = len(gold[assignment.solution_id])
    for index in range(n):
        client.post(
            reverse("labeling:rate", kwargs={"slug": campaign.slug, "pk": assignment.pk}),
            {"step_index": index, "rating": 0},
            HTTP_HX_REQUEST="true",
        )
    response = client.post(
        reverse("labeling:submit", kwargs={"slug": campaign.slug, "pk": assignment.pk}),
        {"submission_key": f"web-{assignment.pk}-{assignment.solution_id}"},
        HTTP_HX_REQUEST="true",
    )
    membership.refresh_from_db()
    assert membership.status == Membership.Status.PAUSED
    assert escape(membership.pause_reason) in response.content.decode()


def test_the_manager_sees_who_was_paused_when_and_why_and_can_resume(client):
    campaign, gold = qc_campaign(qc_pause=True)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER)
    membership, _ = work_through(campaign, gold, constant(1))
    name = membership.user.username
    summary = membership.pause_summary
    assert summary.startswith("by the QC rule on ") and "over the last 20 QC questions" in summary

    client.force_login(manager.user)
    slug = campaign.slug
    members = client.get(reverse("annotators:members", kwargs={"slug": slug})).content.decode()
    assert name in members and escape(summary) in members
    dashboard = client.get(reverse("annotators:dashboard", kwargs={"slug": slug})).content.decode()
    assert 'id="paused-members"' in dashboard and name in dashboard
    assert escape(summary) in dashboard and "The QC pause rule is on" in dashboard
    url = reverse("annotators:member", kwargs={"slug": slug, "pk": membership.pk})
    detail = client.get(url).content.decode()
    assert 'id="pause"' in detail and escape(membership.pause_reason) in detail

    client.post(url, {"role": "annotator", "status": "active"})
    membership.refresh_from_db()
    assert membership.status == Membership.Status.ACTIVE
    answer = api_client_for(membership.user).post(f"/api/campaigns/{slug}/next/")
    assert answer.status_code == 200 and answer.json()["assignment"] is not None
    dashboard = client.get(reverse("annotators:dashboard", kwargs={"slug": slug})).content.decode()
    assert "Nobody is paused." in dashboard


def test_a_manager_pause_says_so_without_a_rule_reason(client):
    campaign, _ = qc_campaign(qc_pause=True)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER)
    membership = make_member(campaign=campaign)
    client.force_login(manager.user)
    url = reverse("annotators:member", kwargs={"slug": campaign.slug, "pk": membership.pk})
    client.post(url, {"role": "annotator", "status": "paused"})
    membership.refresh_from_db()
    assert membership.paused_at is not None and not membership.paused_by_rule
    assert membership.pause_summary.startswith("by a manager on ")
    answer = api_client_for(membership.user).post(f"/api/campaigns/{campaign.slug}/next/")
    assert answer.json()["detail"] == MembershipInactive.message


def test_a_manager_turns_the_rule_on_with_its_settings_through_the_api():
    campaign = make_campaign()
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER)
    api = api_client_for(manager.user)
    url = f"/api/campaigns/{campaign.slug}/"
    response = api.patch(url, {"qc_pause": True, "qc_pause_window": 15}, format="json")
    assert response.status_code == 200, response.json()
    campaign.refresh_from_db()
    assert (campaign.qc_pause, campaign.qc_pause_window) == (True, 15)
    assert campaign.qc_pause_threshold == QC_PAUSE_THRESHOLD_DEFAULT
    refused = api.patch(url, {"qc_pause_threshold": 1.5, "qc_pause_window": 0}, format="json")
    assert refused.status_code == 400
    assert set(refused.json()) == {"qc_pause_threshold", "qc_pause_window"}


def test_the_settings_page_offers_the_rule(client):
    campaign = make_campaign()
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER)
    client.force_login(manager.user)
    url = reverse("labeling:campaign-settings", kwargs={"slug": campaign.slug})
    html = client.get(url).content.decode()
    assert 'name="qc_pause"' in html and 'name="qc_pause_window"' in html
    data = {
        "name": campaign.name,
        "instructions": "",
        "overlap": 1,
        "lease_seconds": 1800,
        "stop_at_first_error": "on",
        "qc_rate": 0.1,
        "screening_threshold": 0.35,
        "qc_pause": "on",
        "qc_pause_window": 12,
        "qc_pause_threshold": 0.3,
        "bad_problem_limit": 2,
        "al_wrong_answer_share": 0.8,
        "al_retrain_every": 500,
        "al_backbone": "bow",
    }
    assert client.post(url, data).status_code == 302
    campaign.refresh_from_db()
    assert (campaign.qc_pause, campaign.qc_pause_window, campaign.qc_pause_threshold) == (
        True,
        12,
        0.3,
    )
    # A form from before the setting (no window, no threshold) keeps the campaign's.
    del data["qc_pause_window"], data["qc_pause_threshold"]
    assert client.post(url, data).status_code == 302
    campaign.refresh_from_db()
    assert (campaign.qc_pause_window, campaign.qc_pause_threshold) == (12, 0.3)

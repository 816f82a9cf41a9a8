"""My campaigns: each with what is left for me and what I did today."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from labeling.models import Membership
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db


def test_it_lists_my_campaigns_with_work_left_and_work_done_today(client):
    mine = make_campaign(slug="mine", name="Mine")
    not_mine = make_campaign(slug="theirs", name="Someone else's")
    user = make_member(campaign=mine).user
    for _ in range(3):
        make_solution(campaign=mine, steps=["a", "b"])
    done = make_solution(campaign=mine, steps=["a", "b", "c"])
    make_labelled(solution=done, annotator=user, ratings=[1, 1, 0])
    yesterday = make_solution(campaign=mine, steps=["a"])
    make_labelled(
        solution=yesterday,
        annotator=user,
        ratings=[1],
        submitted_at=timezone.now() - timedelta(days=2),
    )
    make_solution(campaign=not_mine)
    client.force_login(user)

    html = client.get(reverse("home")).content.decode()

    assert "Mine" in html and "Someone else" not in html
    assert "3 solutions" in html  # left: the open ones I never had
    assert "1 solution, 3 steps" in html  # today
    assert 'href="/campaigns/mine/label/"' in html and "Start labelling" in html


def test_a_campaign_with_work_in_progress_offers_to_resume(client):
    campaign = make_campaign(slug="resume")
    make_solution(campaign=campaign)
    user = make_member(campaign=campaign).user
    client.force_login(user)
    client.get(reverse("labeling:label", kwargs={"slug": "resume"}))
    assert "Resume labelling" in client.get(reverse("home")).content.decode()


def test_inactive_memberships_and_paused_campaigns(client):
    gone = make_campaign(slug="gone", name="Gone")
    paused = make_campaign(slug="paused", name="Paused one", is_paused=True)
    user = make_user()
    make_member(campaign=gone, user=user, status=Membership.Status.REMOVED)
    make_member(campaign=paused, user=user)
    client.force_login(user)
    html = client.get(reverse("home")).content.decode()
    assert "Gone" not in html
    assert "Paused one" in html and "/campaigns/paused/label/" not in html


def test_a_failed_screening_is_said_with_score_and_pass_mark_and_no_work_offered(client):
    campaign = make_campaign(slug="screened", requires_screening=True, screening_threshold=0.35)
    for _ in range(3):
        make_solution(campaign=campaign)
    membership = make_member(campaign=campaign)
    Membership.objects.filter(pk=membership.pk).update(screening="failed", screening_score=-0.12)
    client.force_login(membership.user)

    html = client.get(reverse("home")).content.decode()

    assert "your score is -0.12 and it needs 0.35 or more" in html
    assert "Left for you" not in html
    assert "Start labelling" not in html
    label = client.get(reverse("labeling:label", kwargs={"slug": "screened"})).content.decode()
    assert "your score is -0.12 and it needs 0.35 or more" in label
    assert 'id="left-for-you"' not in label


def test_screening_turned_off_lifts_the_gate(client):
    campaign = make_campaign(slug="open", requires_screening=False)
    make_solution(campaign=campaign)
    membership = make_member(campaign=campaign)
    Membership.objects.filter(pk=membership.pk).update(screening="failed", screening_score=-0.12)
    client.force_login(membership.user)
    html = client.get(reverse("home")).content.decode()
    assert "Start labelling" in html and "did not pass" not in html

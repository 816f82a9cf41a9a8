"""The dashboard says how old its figures really are and recomputes them on its own once
solutions were submitted after them (not more often than ``STEPWISE_SNAPSHOT_MIN_AGE``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotators.models import CampaignSnapshot
from annotators.snapshots import snapshot_run
from tests.factories import make_campaign, make_labelled, make_member, make_solution

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(settings):
    settings.STEPWISE_SNAPSHOT_MAX_AGE = 300
    settings.STEPWISE_SNAPSHOT_MIN_AGE = 30
    return make_campaign(slug="fresh")


@pytest.fixture
def manager(client, campaign):
    user = make_member(campaign=campaign, role="manager").user
    client.force_login(user)
    return user


def figures(campaign, *, read_at):
    """Figures whose reading began at ``read_at`` and ended a second later."""
    snapshot = snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    CampaignSnapshot.objects.filter(pk=snapshot.pk).update(
        started_at=read_at, computed_at=read_at + timedelta(seconds=1)
    )
    return snapshot


def pending(campaign):
    return CampaignSnapshot.objects.filter(campaign=campaign, status="pending").count()


def dashboard(client, campaign):
    return client.get(reverse("annotators:dashboard", kwargs={"slug": campaign.slug}))


def test_it_dates_the_figures_from_when_their_reading_began(client, campaign, manager):
    read_at = timezone.now().replace(microsecond=0) - timedelta(seconds=20)
    figures(campaign, read_at=read_at)

    body = dashboard(client, campaign).content.decode()

    assert f'Figures as of <time datetime="{read_at.isoformat()}">' in body
    assert "nothing submitted since" in body


def test_it_counts_the_solutions_submitted_since(client, campaign, manager):
    figures(campaign, read_at=timezone.now() - timedelta(seconds=10))
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, 1, 1])
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1])

    body = dashboard(client, campaign).content.decode()

    assert "<strong>2 solutions submitted since</strong>" in body


def test_new_submissions_make_figures_past_the_minimum_age_stale(client, campaign, manager):
    figures(campaign, read_at=timezone.now() - timedelta(seconds=60))
    dashboard(client, campaign)
    assert pending(campaign) == 0  # a minute old, nothing new: still good

    make_labelled(solution=make_solution(campaign=campaign), ratings=[1])
    body = dashboard(client, campaign).content.decode()

    assert pending(campaign) == 1
    assert "Computing fresh figures" in body
    assert 'hx-trigger="every 2s"' in body


def test_figures_younger_than_the_minimum_age_are_kept(client, campaign, manager):
    figures(campaign, read_at=timezone.now() - timedelta(seconds=5))
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1])

    dashboard(client, campaign)

    assert pending(campaign) == 0


def test_an_open_page_polls_its_figures_and_asks_for_fresh_ones_once_stale(
    client, campaign, manager
):
    snapshot = figures(campaign, read_at=timezone.now() - timedelta(seconds=10))
    body = dashboard(client, campaign).content.decode()
    status = reverse(
        "labeling:job-status",
        kwargs={"slug": campaign.slug, "kind": "snapshots", "pk": snapshot.pk},
    )
    # The figures shown are a finished job that the page goes on polling, at the one interval.
    assert f'hx-get="{status}?state=done" hx-trigger="every 2s"' in body
    quiet = client.get(status, {"state": "done"}, HTTP_HX_REQUEST="true")
    assert "HX-Refresh" not in quiet.headers and pending(campaign) == 0

    CampaignSnapshot.objects.filter(pk=snapshot.pk).update(
        computed_at=timezone.now() - timedelta(seconds=45)
    )
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1])
    polled = client.get(status, {"state": "done"}, HTTP_HX_REQUEST="true")

    assert pending(campaign) == 1
    fresh = CampaignSnapshot.objects.get(status="pending")
    html = polled.content.decode()
    assert "Computing fresh figures" in html and f'id="job-snapshots-{fresh.pk}"' in html

    newer = snapshot_run(snapshot=fresh)
    done = client.get(status, {"state": "done"}, HTTP_HX_REQUEST="true")
    assert done.headers.get("HX-Refresh") == "true"
    assert newer.data["totals"]["assignments"] == 1

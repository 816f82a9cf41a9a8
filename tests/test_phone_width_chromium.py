"""In a real Chromium at 390 px (a phone): no page is wider than the screen.

Wide content (tables, long ids) may scroll inside its own box; the document itself must not
scroll sideways. Each page is loaded with some data in it, as a manager and as an annotator.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotators.snapshots import snapshot_run
from labeling.models import Membership
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MANAGER_PAGES = [
    "labeling:campaigns",
    "labeling:campaign",
    "labeling:campaign-settings",
    "labeling:browser",
    "annotators:members",
    "annotators:invitations",
    "annotators:gold",
    "annotators:dashboard",
    "annotators:agreement",
    "annotators:reviews",
    "annotators:adjudications",
    "exports:list",
    "imports:list",
    "machines:generations",
    "learning:page",
    "annotators:profile",
]
ANNOTATOR_PAGES = ["labeling:label", "labeling:my-work", "annotators:my-reviews"]

# How far the document reaches past the window, in CSS pixels (0: it fits).
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture
def phone(page):
    page.set_viewport_size({"width": 390, "height": 844})
    return page


def log_in(page, live_server, client, user) -> None:
    page.context.clear_cookies()
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def url_of(name: str, campaign) -> str:
    if name in ("labeling:campaigns", "annotators:profile"):
        return reverse(name)
    return reverse(name, kwargs={"slug": campaign.slug})


def test_no_page_is_wider_than_a_phone(live_server, phone, client):
    from annotators.models import CampaignSnapshot

    campaign = make_campaign(
        slug="a-campaign-with-a-rather-long-slug", name="A campaign with a rather long name"
    )
    solution = make_solution(campaign=campaign, steps=["$x = 1$", "so $y = 2$"])
    make_solution(campaign=campaign, steps=["the next one"])
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, 1])
    alice = make_member(campaign=campaign, user=make_user(username="alice-annotator")).user
    bob = make_member(campaign=campaign, user=make_user(username="bob-annotator")).user
    make_labelled(solution=solution, ratings=[1, -1], annotator=alice)
    make_labelled(solution=solution, ratings=[1, 1], annotator=bob)
    manager = make_member(
        campaign=campaign, role=Membership.Role.MANAGER, user=make_user(username="the-manager")
    ).user
    snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))

    too_wide = {}
    for user, names in ((manager, MANAGER_PAGES), (alice, ANNOTATOR_PAGES)):
        log_in(phone, live_server, client, user)
        for name in names:
            response = phone.goto(live_server.url + url_of(name, campaign))
            assert response.status == 200, name
            overflow = phone.evaluate(OVERFLOW)
            if overflow > 0:
                too_wide[name] = overflow
    item = reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": solution.pk})
    log_in(phone, live_server, client, manager)
    phone.goto(live_server.url + item)
    if phone.evaluate(OVERFLOW) > 0:
        too_wide["labeling:browser-item"] = phone.evaluate(OVERFLOW)
    assert too_wide == {}

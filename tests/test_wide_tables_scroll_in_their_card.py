"""Wide tables scroll sideways inside their card instead of widening the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from annotators.models import CampaignSnapshot
from annotators.snapshots import snapshot_run
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db

CSS = Path(__file__).resolve().parents[1] / "static" / "css" / "stepwise.css"


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="wide")
    for n in range(3):
        person = make_member(campaign=campaign, user=make_user(username=f"annotator-{n}" * 6)).user
        make_labelled(solution=make_solution(campaign=campaign), ratings=[1, 0], annotator=person)
    snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    return campaign


@pytest.mark.parametrize(
    "name",
    [
        "annotators:members",
        "annotators:dashboard",
        "annotators:reviews",
        "annotators:agreement",
    ],
)
def test_the_page_wraps_its_tables_in_a_scroller(client, campaign, name):
    client.force_login(make_member(campaign=campaign, role="manager").user)

    page = client.get(reverse(name, kwargs={"slug": campaign.slug})).content.decode()

    tables = page.count('<table class="data')
    wrapped = re.findall(r'class="[^"]*table-scroll[^"]*">\s*<table class="data', page)
    assert tables >= 1 and len(wrapped) == tables


def test_the_scroller_scrolls_sideways():
    css = CSS.read_text()
    assert ".table-scroll { overflow-x: auto; }" in css


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_members_page_is_no_wider_than_the_screen(live_server, page, client):
    campaign = make_campaign(slug="phone-wide")
    make_member(campaign=campaign, user=make_user(username="x" * 60))
    client.force_login(make_member(campaign=campaign, role="manager").user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 390, "height": 844})

    page.goto(live_server.url + reverse("annotators:members", kwargs={"slug": campaign.slug}))

    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    scroller = page.locator(".table-scroll").first
    assert scroller.evaluate("el => el.scrollWidth > el.clientWidth")

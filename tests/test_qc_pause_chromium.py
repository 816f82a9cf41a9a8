"""In a real Chromium: the QC pause rule pauses a careless annotator at the submission that takes
their score under the threshold; the labelling page says why at once, and the manager's members
page and dashboard show who was paused, when and why.

Deterministic: every step waits for the element that shows the server's answer arrived."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Assignment, Membership
from tests.factories import make_campaign, make_gold_solution, make_member, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def logged_in(live_server, page, client, user):
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return page


def test_a_careless_annotator_is_paused_told_why_and_shown_to_the_manager(
    live_server, page, client
):
    campaign = make_campaign(slug="pause-in-browser", qc_rate=1.0, qc_pause=True, qc_pause_window=2)
    for _ in range(3):
        make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1], steps=["one", "two"])
    make_solution(campaign=campaign, steps=["a regular one"])
    annotator = make_member(campaign=campaign)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user

    page = logged_in(live_server, page, client, annotator.user)
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    for _ in range(2):  # +1 on every step: never finds the error
        page.wait_for_selector("#steps[data-assignment]")
        served = page.locator("#steps").get_attribute("data-assignment")
        for then in (1, "end"):
            page.keyboard.press("3")
            page.wait_for_selector(f'#steps[data-current="{then}"]')
        page.keyboard.press("Enter")
        page.wait_for_selector(f'#steps[data-assignment="{served}"]', state="detached")
    annotator.refresh_from_db()
    assert annotator.status == Membership.Status.PAUSED
    assert Assignment.objects.filter(annotator=annotator.user, status="submitted").count() == 2
    workspace = page.inner_text("#workspace")
    assert "by the campaign's quality rule" in workspace
    assert "last 2 quality-control questions" in workspace
    assert "until a campaign manager resumes you" in workspace

    page = logged_in(live_server, page, client, manager)
    page.goto(live_server.url + reverse("annotators:members", kwargs={"slug": campaign.slug}))
    row = page.locator("tr", has_text=annotator.user.username)
    assert "paused" in row.inner_text()
    assert "by the QC rule on" in row.inner_text()
    page.goto(live_server.url + reverse("annotators:dashboard", kwargs={"slug": campaign.slug}))
    assert annotator.user.username in page.inner_text("#paused-members")

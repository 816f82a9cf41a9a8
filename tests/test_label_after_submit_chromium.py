"""In a real Chromium: what the labelling page does around a submission. Enter pressed twice
never lands on the next solution; Back after a submit shows Home's figures as they are now; an
action whose session has ended says so on the login page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Assignment
from tests.factories import make_campaign, make_member, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="after-submit")
    make_solution(campaign=campaign, steps=["a", "b"])
    for _ in range(3):
        make_solution(campaign=campaign, steps=["c", "d", "e", "f", "g"])
    return campaign


@pytest.fixture
def logged_in(live_server, page, client, campaign):
    client.force_login(make_member(campaign=campaign).user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return page


def open_label(page, live_server, campaign):
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    page.wait_for_selector("[data-open-help]:not([hidden])")


def rate_all(page, n: int) -> None:
    for i in range(n):
        page.keyboard.press("3")
        page.wait_for_selector(f'#steps[data-current="{i + 1 if i + 1 < n else "end"}"]')


def test_enter_pressed_twice_never_reaches_the_next_solution(live_server, logged_in, campaign):
    page = logged_in
    open_label(page, live_server, campaign)
    first = page.get_attribute("#steps", "data-assignment")
    rate_all(page, 2)
    held = []
    page.route("**/submit/", lambda route: held.append(route))
    page.keyboard.press("Enter")
    page.wait_for_selector("#workspace.htmx-request", state="attached")
    page.keyboard.press("Enter")  # the second press, while the first is in flight
    held[0].continue_()
    page.wait_for_selector(f'#steps:not([data-assignment="{first}"])')
    page.wait_for_selector("#workspace:not(.htmx-request)")
    page.evaluate("() => new Promise(r => setTimeout(r, 0))")  # the queued keys' turn
    assert page.locator("[data-missing]").is_hidden()
    assert "Not submitted" not in page.inner_text("#workspace")
    assert page.locator(".notice").inner_text() == "Submitted."
    assert len(held) == 1  # the second Enter posted nothing
    second = Assignment.objects.get(status="leased")
    assert not second.labels.exists()


def test_back_after_a_submit_shows_home_as_it_is_now(live_server, logged_in, campaign):
    page = logged_in
    page.goto(live_server.url + reverse("home"))
    assert "0 solutions, 0 steps" in page.inner_text(".card.campaign")
    page.get_by_role("link", name="Start labelling").click()
    page.wait_for_selector("[data-open-help]:not([hidden])")
    served = page.get_attribute("#steps", "data-assignment")
    rate_all(page, 2)
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#steps:not([data-assignment="{served}"])')
    page.go_back()
    page.wait_for_selector(".card.campaign")
    assert "1 solution, 2 steps" in page.inner_text(".card.campaign")
    assert "Resume labelling" in page.inner_text(".card.campaign")


def test_an_action_after_the_session_ended_says_so_on_the_login_page(
    live_server, logged_in, campaign
):
    from django.contrib.sessions.models import Session

    page = logged_in
    open_label(page, live_server, campaign)
    Session.objects.all().delete()
    page.keyboard.press("3")
    page.wait_for_url("**/login/**")
    said = page.inner_text("#session-ended")
    assert "Your session has ended" in said
    assert "that last action was not saved" in said
    assert not Assignment.objects.get().labels.exists()

"""In a real Chromium: the labelling page's progress, the "missing steps" message on an early
Enter, and a notice that goes away at the next action."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Assignment
from tests.factories import make_campaign, make_member, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def campaign():
    return make_campaign(slug="progress")


@pytest.fixture
def page_of(live_server, page, client, campaign):
    user = make_member(campaign=campaign).user
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )

    def open_page():
        page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
        page.wait_for_selector("#steps")
        return page

    open_page.user = user
    return open_page


def press(page, key: str, then: str | int) -> None:
    page.keyboard.press(key)
    page.wait_for_selector(f'#steps[data-current="{then}"]')


def test_enter_too_early_names_the_missing_steps_and_progress_follows_submissions(
    page_of, campaign
):
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_solution(campaign=campaign, steps=["d"])
    page = page_of()
    assert "Campaign: 0 of 2 solutions done" in page.inner_text("#campaign-progress")
    assert "0 solutions" in page.inner_text("#session-work")
    missing = page.locator("[data-missing]")
    assert missing.is_hidden()

    press(page, "3", 1)
    page.keyboard.press("Enter")

    missing.wait_for(state="visible")
    assert "steps 2 and 3 are not rated yet" in missing.inner_text()
    assert Assignment.objects.get(annotator=page_of.user).status == "leased"  # nothing submitted

    press(page, "3", 2)  # the next action: a fresh steps partial, the message gone
    assert page.locator("[data-missing]").is_hidden()
    press(page, "2", "end")
    first = Assignment.objects.get(annotator=page_of.user)
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#steps:not([data-assignment="{first.pk}"])')

    assert page.inner_text("[data-notice]") == "Submitted."
    assert "Campaign: 1 of 2 solutions done" in page.inner_text("#campaign-progress")
    assert "1 solution, 3 steps" in page.inner_text("#session-work")

    press(page, "3", "end")  # the next action: the "Submitted." notice is gone
    assert page.locator("[data-notice]").count() == 0

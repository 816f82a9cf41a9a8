"""In a real Chromium: focus never falls back to the page's body while labelling with the keys.
After each rating it is on the next step's rating group, after a −1 and after Esc in the
correction box on the submit button, and on the next solution's first step after a submit: a
screen reader keeps its place."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_campaign, make_member, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FOCUSED = """() => {
  const e = document.activeElement;
  return e === document.body ? "body" : (e.getAttribute("aria-label") || e.textContent.trim());
}"""


def test_focus_follows_the_step_being_rated(live_server, page, client):
    campaign = make_campaign(slug="focus")
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_solution(campaign=campaign, steps=["d", "e"])
    client.force_login(make_member(campaign=campaign).user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    page.wait_for_selector("[data-open-help]:not([hidden])")

    page.keyboard.press("3")
    page.wait_for_selector('#steps[data-current="1"]')
    assert page.evaluate(FOCUSED) == "Rate step 2"
    page.keyboard.press("2")
    page.wait_for_selector('#steps[data-current="2"]')
    assert page.evaluate(FOCUSED) == "Rate step 3"
    page.keyboard.press("u")  # an undo: back on step 2's ratings
    page.wait_for_selector('#steps[data-current="1"]')
    assert page.evaluate(FOCUSED) == "Rate step 2"
    page.keyboard.press("1")  # a −1 ends the solution: the submit button is next
    page.wait_for_selector('#steps[data-current="end"]')
    assert page.evaluate(FOCUSED) == "Enter Submit"
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.id") == "correction"
    page.keyboard.type("b is right")
    page.keyboard.press("Escape")
    assert page.evaluate(FOCUSED) == "Enter Submit"
    served = page.get_attribute("#steps", "data-assignment")
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#steps:not([data-assignment="{served}"])')
    assert page.evaluate(FOCUSED) == "Rate step 1"

"""In a real Chromium at 1280 and 390 px: a long display formula scrolls inside its own step
(reachable by keyboard, with a label) and the labelling page never scrolls sideways, before and
after a rating and after Enter brings the next solution."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_campaign, make_member, make_problem, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "$$" + " + ".join(f"x_{{{i}}}^{{2}}" for i in range(1, 160)) + " = 0$$"
# How far the document reaches past the window, in CSS pixels (0: it fits).
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.mark.parametrize("width", [1280, 390])
def test_a_long_formula_scrolls_inside_its_step_not_the_page(live_server, page, client, width):
    page.set_viewport_size({"width": width, "height": 800})
    campaign = make_campaign(slug="wide")
    make_solution(
        campaign=campaign,
        problem=make_problem(campaign=campaign, text=f"Show that {LONG}"),
        steps=[f"We have {LONG}", "Then $x = 1$.", "done"],
    )
    make_solution(
        campaign=campaign,
        problem=make_problem(campaign=campaign, text=f"Again: {LONG}"),
        steps=[LONG, "b"],
    )
    client.force_login(make_member(campaign=campaign).user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    page.wait_for_selector("[data-open-help]:not([hidden])")
    page.wait_for_selector("#steps .math-display .katex")
    assert page.evaluate(OVERFLOW) == 0

    formula = page.locator("#step-0 .math-display")
    assert formula.evaluate("e => e.scrollWidth > e.clientWidth")  # it does scroll, inside
    assert formula.get_attribute("tabindex") == "0"
    assert "formula" in (formula.get_attribute("aria-label") or "").lower()
    formula.focus()
    page.keyboard.press("ArrowRight")  # a focused scroller scrolls with the keys
    page.wait_for_function("e => e.scrollLeft > 0", arg=formula.element_handle())
    page.locator("body").focus()

    page.keyboard.press("3")
    page.wait_for_selector('#steps[data-current="1"]')
    assert page.evaluate(OVERFLOW) == 0
    for key, then in (("3", 2), ("3", "end")):
        page.keyboard.press(key)
        page.wait_for_selector(f'#steps[data-current="{then}"]')
    served = page.get_attribute("#steps", "data-assignment")
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#steps:not([data-assignment="{served}"])')
    page.wait_for_selector("#steps .math-display .katex")
    assert page.evaluate(OVERFLOW) == 0
    assert page.evaluate("window.scrollX") == 0
    assert page.locator(".problem").bounding_box()["x"] >= 0  # the problem is on screen
    assert page.locator("#step-0 .math-display").get_attribute("tabindex") == "0"

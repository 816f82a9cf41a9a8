"""In a real Chromium: one annotator with the same solution open in two tabs.

A submission stores what the submitting tab shows, or is refused (409) with the difference shown
and the saved ratings in place of the stale ones; never the other tab's ratings unseen.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Assignment
from tests.factories import make_campaign, make_member, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {"✓ +1 positive": 1, "~ 0 neutral": 0, "✗ −1 negative": -1}


@pytest.fixture
def two_tabs(live_server, page, client):
    campaign = make_campaign(slug="two-tabs")
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_solution(campaign=campaign, steps=["the next one"])
    user = make_member(campaign=campaign).user
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    url = live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug})
    tab_a, tab_b = page, page.context.new_page()
    for tab in (tab_a, tab_b):
        tab.goto(url)
        tab.wait_for_selector("[data-open-help]:not([hidden])")
    return tab_a, tab_b


def press(tab, key: str, then) -> None:
    tab.bring_to_front()
    tab.keyboard.press(key)
    tab.wait_for_selector(f'#steps[data-current="{then}"]')


def shown(tab) -> list[int]:
    return [WORDS[t] for t in tab.locator(".step.rated .rating").all_inner_texts()]


def stored(assignment: Assignment) -> list[int | None]:
    return list(assignment.labels.order_by("step__index").values_list("rating", flat=True))


def test_a_submit_after_another_tab_changed_a_rating_is_refused_with_the_difference(two_tabs):
    tab_a, tab_b = two_tabs
    assignment = Assignment.objects.get()
    assert tab_a.get_attribute("#steps", "data-assignment") == str(assignment.pk)
    assert tab_b.get_attribute("#steps", "data-assignment") == str(assignment.pk)
    for key, then in (("3", 1), ("3", 2), ("3", "end")):
        press(tab_a, key, then)
    assert shown(tab_a) == [1, 1, 1]
    # Tab B still shows step 1 to rate: it rates it 0 (what the issue saw stored unseen); its
    # answer shows B the saved drafts, every step rated.
    press(tab_b, "2", "end")
    assert stored(assignment) == [0, 1, 1]

    tab_a.bring_to_front()
    with tab_a.expect_response("**/submit/") as answer:
        tab_a.keyboard.press("Enter")
    assert answer.value.status == 409
    error = tab_a.locator("#steps .error[role=alert]")
    error.wait_for()
    text = error.inner_text()
    assert "changed in another tab or window" in text
    assert "Step 1: this page showed +1 positive; saved: 0 neutral." in text
    assignment.refresh_from_db()
    assert assignment.status == "leased"  # nothing stored
    # The tab now shows the saved ratings; Enter submits exactly those.
    assert shown(tab_a) == [0, 1, 1]
    tab_a.wait_for_selector("#workspace:not(.htmx-request)")
    tab_a.keyboard.press("Enter")
    tab_a.wait_for_selector(f'#steps:not([data-assignment="{assignment.pk}"])')
    assignment.refresh_from_db()
    assert assignment.status == "submitted"
    assert stored(assignment) == [0, 1, 1]


def test_a_submit_stores_what_its_page_shows_after_the_other_tab_rated(two_tabs):
    """Tab A's ratings come back with the saved drafts, so its page follows the other tab's
    change as soon as it acts; what it submits is what it shows."""
    tab_a, tab_b = two_tabs
    assignment = Assignment.objects.get()
    press(tab_a, "3", 1)
    press(tab_b, "2", 1)  # B: step 1 is neutral (B's page had not shown A's rating)
    press(tab_a, "3", 2)  # A rates step 2; its page now shows the saved step 1
    press(tab_a, "3", "end")
    on_screen = shown(tab_a)
    assert on_screen == [0, 1, 1]
    tab_a.keyboard.press("Enter")
    tab_a.wait_for_selector(f'#steps:not([data-assignment="{assignment.pk}"])')
    assignment.refresh_from_db()
    assert assignment.status == "submitted"
    assert stored(assignment) == on_screen

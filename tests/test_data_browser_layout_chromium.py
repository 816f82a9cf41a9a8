"""In a real browser, the data browser reads like a data manager: the results start on the first
screen (at 1280x800 and on a phone), the filters beyond search and sort fold away and open on a
click, and each active filter is a chip that removes just that filter."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from labeling.models import Membership
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_url(live_server, page, client):
    campaign = make_campaign(slug="layout", overlap=1)
    alice = make_user(username="alice")
    make_member(campaign=campaign, user=alice)
    for i in range(12):
        solution = make_solution(campaign=campaign, answer_is_correct=bool(i % 2))
        if i % 3 == 0:
            make_labelled(solution=solution, ratings=[1, -1], annotator=alice)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return live_server.url + reverse("labeling:browser", kwargs={"slug": campaign.slug})


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_results_start_on_the_first_screen(page, browser_url, width, height):
    page.set_viewport_size({"width": width, "height": height})
    page.goto(browser_url + "?answer=wrong&negative=true")
    first_row = page.locator("table.browser tbody tr").first
    expect(first_row).to_be_visible()
    box = first_row.bounding_box()
    assert box is not None and box["y"] + box["height"] <= height
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0


def test_the_filter_panel_folds_and_unfolds(page, browser_url):
    page.goto(browser_url)
    wrong = page.locator("input[name=answer][value=wrong]")
    expect(wrong).to_be_hidden()
    page.locator("#filter-panel > summary").click()
    expect(wrong).to_be_visible()
    wrong.check()
    page.select_option("#f-annotator", label="alice")
    page.get_by_role("button", name="Filter").click()
    assert "answer=wrong" in page.url
    expect(page.locator("table.browser tbody tr")).to_have_count(2)  # alice's wrong ones: 3, 9
    expect(wrong).to_be_hidden()  # folded again over the results, the choice kept
    page.locator("#filter-panel > summary").click()
    expect(wrong).to_be_checked()
    page.locator("#filter-panel > summary").click()
    expect(wrong).to_be_hidden()


def test_a_chip_removes_its_filter_and_keeps_the_others(page, browser_url):
    page.goto(browser_url + "?answer=wrong&state=open&state=complete&sort=prm")
    chips = page.locator(".filter-chips .chip")
    expect(chips).to_have_count(3)
    expect(chips).to_contain_text(
        ["Queue state: open", "Queue state: complete", "Final answer: wrong"]
    )
    page.locator(".chip", has_text="Final answer: wrong").click()
    expect(chips).to_have_count(2)
    assert "answer=" not in page.url
    assert "state=open" in page.url and "state=complete" in page.url and "sort=prm" in page.url
    expect(page.locator("#match-count")).to_contain_text("12")
    expect(page.locator("#f-sort")).to_have_value("prm")

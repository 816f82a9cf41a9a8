"""In a real Chromium: a rejection of my work on the labelling page, and its link opens it; a
missed first error on a quality-control question is said only once it is submitted.

Deterministic: every step waits for the element that shows the server's answer arrived."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotators.review.services import review_submit
from labeling import queue
from labeling.models import Assignment
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_member,
    make_solution,
    submit_ratings,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def logged_in(live_server, page, client, user):
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return page


def open_label_page(live_server, page, campaign):
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    page.wait_for_selector("#workspace")


def test_a_rejection_is_shown_and_its_link_opens_my_work(live_server, page, client):
    campaign = make_campaign(slug="rejected-in-browser", overlap=2)
    make_solution(campaign=campaign, steps=["Let $x = 2$.", "So $x^2 = 5$."])
    make_solution(campaign=campaign, steps=["another solution"])
    annotator = make_member(campaign=campaign).user
    reviewer = make_member(campaign=campaign, role="reviewer").user
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
    submit_ratings(assignment=assignment, annotator=annotator, ratings=[1, 1])
    assignment.refresh_from_db()
    review_submit(
        assignment=assignment,
        reviewer=reviewer,
        decision="rejected",
        comment="Step 2 is wrong: $2^2 = 4$.",
    )
    page = logged_in(live_server, page, client, annotator)
    open_label_page(live_server, page, campaign)
    box = page.locator("#rejections")
    assert "Step 2 is wrong" in box.inner_text()
    assert box.locator(".katex").count() == 1  # the comment's math rendered
    box.locator(f'a[data-rejected="{assignment.pk}"]').click()
    page.wait_for_url(f"**/my-work/{assignment.pk}/")
    assert "Step 2 is wrong" in page.inner_text("main")
    assert "So" in page.inner_text("main")


def test_the_qc_notice_appears_only_after_the_question_is_submitted(live_server, page, client):
    campaign = make_campaign(slug="qc-in-browser", qc_rate=1.0)
    gold = make_gold_solution(
        campaign=campaign, kind="qc", gold=[1, -1, None], steps=["one", "two", "three"]
    )
    make_solution(campaign=campaign, steps=["a regular one"])
    annotator = make_member(campaign=campaign).user
    page = logged_in(live_server, page, client, annotator)
    open_label_page(live_server, page, campaign)
    assignment = Assignment.objects.get(solution=gold)
    for key, then in [("3", 1), ("3", 2), ("3", "end")]:
        assert "quality-control" not in page.content()
        page.keyboard.press(key)
        page.wait_for_selector(f'#steps[data-current="{then}"]')
    assert "quality-control" not in page.content()
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#steps:not([data-assignment="{assignment.pk}"])')
    notice = page.locator(".notice").inner_text()
    assert "That was a quality-control question, and you missed its first error" in notice
    assert "a regular one" in page.inner_text("#steps")


def test_on_a_phone_a_rejection_never_pushes_the_rating_buttons_off_the_first_screen(
    live_server, page, client
):
    page.set_viewport_size({"width": 390, "height": 844})
    campaign = make_campaign(slug="rejected-on-a-phone", overlap=2)
    for _ in range(2):
        make_solution(campaign=campaign, steps=["a", "b"])
    make_solution(campaign=campaign, steps=["the one to rate"], priority=-1)
    annotator = make_member(campaign=campaign).user
    reviewer = make_member(campaign=campaign, role="reviewer").user
    for comment in ("A long comment. " * 30, "Another one. " * 30):
        assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
        submit_ratings(assignment=assignment, annotator=annotator)
        assignment.refresh_from_db()
        review_submit(
            assignment=assignment, reviewer=reviewer, decision="rejected", comment=comment
        )
    page = logged_in(live_server, page, client, annotator)
    open_label_page(live_server, page, campaign)
    page.wait_for_selector("#rejections")
    buttons = page.locator(".rate-buttons").bounding_box()
    assert buttons["y"] + buttons["height"] <= 844  # on the first screen
    assert page.locator("#rejections").bounding_box()["y"] > buttons["y"]  # below the solution

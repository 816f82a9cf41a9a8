"""In a real Chromium: an annotator who fails the screening is told so, with their score and the
pass mark, wherever they look (the labelling page, Home, the campaign page), is offered no work
and no "Left for you" figure, and hears nothing about single questions."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Membership
from tests.factories import make_campaign, make_gold_solution, make_member, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_failed_screening_is_said_everywhere_with_score_and_threshold(live_server, page, client):
    campaign = make_campaign(slug="screened", requires_screening=True, screening_threshold=0.35)
    make_gold_solution(campaign=campaign, kind="screening", gold=[1, 1, 0, 1], priority=2)
    make_gold_solution(campaign=campaign, kind="screening", gold=[1, 0, -1, 1], priority=1)
    for i in range(5):
        make_solution(campaign=campaign, steps=[f"regular {i}"])
    membership = make_member(campaign=campaign)
    client.force_login(membership.user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    label = live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug})
    page.goto(label)
    page.wait_for_selector("[data-open-help]:not([hidden])")
    # Two screening questions rated badly with the keyboard (the second's −1 on the wrong step).
    for keys in ("3333", "31"):
        served = page.get_attribute("#steps", "data-assignment")
        assert page.locator(".badge", has_text="screening question").count() == 1
        for i, key in enumerate(keys):
            page.keyboard.press(key)
            then = "end" if i == len(keys) - 1 else i + 1
            page.wait_for_selector(f'#steps[data-current="{then}"]')
        page.keyboard.press("Enter")
        page.wait_for_selector(f'#workspace:not([data-assignment="{served}"])')

    membership.refresh_from_db()
    assert membership.screening == Membership.Screening.FAILED
    score = f"{membership.screening_score:.2f}"
    said = f"your score is {score} and it needs 0.35 or more"

    # The labelling page, right after the last question.
    workspace = page.inner_text("#workspace")
    assert "Screening not passed" in workspace
    assert said in workspace
    assert page.locator("#left-for-you").count() == 0
    assert page.locator("#steps").count() == 0
    for per_question in ("first −1", "first wrong one", "quality-control", "Step "):
        assert per_question not in workspace

    # Home: the outcome instead of "Left for you" and a button to no work.
    page.goto(live_server.url + reverse("home"))
    card = page.locator(".card.campaign")
    assert said in card.inner_text()
    assert "Left for you" not in card.inner_text()
    assert card.get_by_role("link", name="Start labelling").count() == 0
    assert card.get_by_role("link", name="Resume labelling").count() == 0

    # The labelling page opened again, and the campaign page.
    page.goto(label)
    assert said in page.inner_text("[data-screening-failed]")
    assert page.locator("#left-for-you").count() == 0
    page.goto(live_server.url + reverse("labeling:campaign", kwargs={"slug": campaign.slug}))
    outcome = page.inner_text("#screening-outcome")
    assert f"your score against the reference ratings is {score}" in outcome
    assert "needs 0.35" in outcome
    assert page.get_by_role("link", name="Start labelling").count() == 0

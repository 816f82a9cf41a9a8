"""In a real Chromium: what a day of labelling ran into (issue 27), each as a person meets it.

Deterministic: every step waits for the element or attribute that shows the server's answer
arrived, never for a fixed time (the 20 ms between key presses is how fast the person types).
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotators.models import CampaignSnapshot
from annotators.snapshots import snapshot_run
from labeling import queue
from labeling.models import Assignment, Membership
from tests.factories import make_campaign, make_member, make_solution, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, live_server, client, user) -> None:
    """The browser holds the session of ``user`` (as after logging in)."""
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def label_url(live_server, campaign) -> str:
    return live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug})


def submitted(campaign, user, ratings: list[int]) -> Assignment:
    """Work ``user`` submitted through the queue, as the labelling page does."""
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    for index, rating in enumerate(ratings):
        queue.step_label_set(assignment=assignment, annotator=user, step_index=index, rating=rating)
    queue.assignment_submit(assignment=assignment, annotator=user, submission_key="k")
    assignment.refresh_from_db()
    return assignment


def ratings_of(assignment: Assignment) -> list[int]:
    return list(assignment.labels.order_by("step__index").values_list("rating", flat=True))


def test_logging_in_again_returns_to_the_labelling_page(live_server, page, client):
    campaign = make_campaign(slug="relogin")
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    user = make_member(campaign=campaign, user=make_user(username="ann", password="pw")).user
    log_in(page, live_server, client, user)
    page.goto(label_url(live_server, campaign))
    page.wait_for_selector('#steps[data-current="0"]')
    # The session ends (expiry, or a logout in another tab); the page is still open.
    page.context.clear_cookies(name="sessionid")
    page.keyboard.press("3")
    page.wait_for_selector("input[name=username]")
    assert "next=/campaigns/relogin/label/" in page.url.replace("%2F", "/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", "pw")
    with page.expect_navigation():
        page.press("input[name=password]", "Enter")
    page.wait_for_selector('#steps[data-current="0"]')
    assert page.url == label_url(live_server, campaign)
    page.keyboard.press("3")  # and labelling goes on
    page.wait_for_selector('#steps[data-current="1"]')
    assert ratings_of(Assignment.objects.get(status="leased")) == [1]


def test_the_amend_error_names_the_step_the_person_set(live_server, page, client):
    campaign = make_campaign(slug="amend")
    make_solution(campaign=campaign, steps=["a", "b", "c", "d", "e"])
    user = make_member(campaign=campaign).user
    work = submitted(campaign, user, [1, 1, 1, 1, 1])
    log_in(page, live_server, client, user)
    url = reverse("labeling:my-work-item", kwargs={"slug": campaign.slug, "pk": work.pk})
    page.goto(live_server.url + url)
    page.select_option("#amend select[name=step_3]", "-1")  # step 4 negative, step 5 still +1
    with page.expect_navigation():
        page.click("#amend button[type=submit]")
    error = page.inner_text("#amend .errorlist")
    assert error.startswith("Step 4 is negative"), error
    assert Assignment.objects.get().status == "submitted"  # nothing changed


def test_forward_after_a_submit_shows_the_current_solution(live_server, page, client):
    campaign = make_campaign(slug="forward")
    make_solution(campaign=campaign, steps=["first solution"])
    make_solution(campaign=campaign, steps=["second solution"])
    user = make_member(campaign=campaign).user
    log_in(page, live_server, client, user)
    response = page.goto(label_url(live_server, campaign))
    assert "no-store" in response.headers["cache-control"]
    first = Assignment.objects.get(status="leased")
    page.keyboard.press("3")
    page.wait_for_selector('#steps[data-current="end"]')
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#steps:not([data-assignment="{first.pk}"])')
    page.goto(live_server.url + reverse("labeling:campaigns"))
    page.go_back()
    page.go_forward()
    page.go_back()
    page.wait_for_selector("#steps")
    assert "second solution" in page.inner_text("#steps")
    second = Assignment.objects.get(status="leased")
    assert page.get_attribute("#steps", "data-assignment") == str(second.pk)
    page.keyboard.press("3")  # the next key rates the solution shown, no 409
    page.wait_for_selector('#steps[data-current="end"]')
    assert ratings_of(second) == [1]


def test_the_item_history_lists_served_submitted_amended(live_server, page, client):
    campaign = make_campaign(slug="history")
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    user = make_member(campaign=campaign, user=make_user(username="ann")).user
    work = submitted(campaign, user, [1, 1])
    queue.assignment_amend(assignment=work, annotator=user, ratings=[1, -1])
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    log_in(page, live_server, client, manager)
    url = reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": solution.pk})
    page.goto(live_server.url + url)
    rows = page.locator(".history tbody tr")
    what = [rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())]
    assert what == ["served", "submitted", "amended"]
    assert "found an error" in rows.nth(2).inner_text()


@pytest.mark.parametrize("screening", [False, True])
def test_no_pending_screening_without_screening(live_server, page, client, screening):
    campaign = make_campaign(slug=f"screen-{screening}", requires_screening=screening)
    make_member(campaign=campaign)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    log_in(page, live_server, client, manager)
    for name in ("annotators:members", "annotators:dashboard"):
        page.goto(live_server.url + reverse(name, kwargs={"slug": campaign.slug}))
        text = page.inner_text("main")
        assert ("pending" in text) is screening, name
        assert ("screening" in text.lower()) is screening or name == "annotators:dashboard"


def type_keys(page, keys: str) -> None:
    """Keys pressed 20 ms apart: faster than the server answers a rating."""
    for key in keys:
        page.keyboard.press(key)
        page.wait_for_timeout(20)


def test_nine_keys_pressed_20_ms_apart_give_nine_ratings_in_order(live_server, page, client):
    campaign = make_campaign(slug="fast")
    make_solution(campaign=campaign, steps=[f"step {i}" for i in range(1, 10)])
    make_solution(campaign=campaign, steps=[f"step {i}" for i in range(1, 5)])
    user = make_member(campaign=campaign).user
    log_in(page, live_server, client, user)
    page.goto(label_url(live_server, campaign))
    page.wait_for_selector('#steps[data-current="0"]')
    first = Assignment.objects.get(status="leased")
    type_keys(page, "323323323")
    page.wait_for_selector('#steps[data-current="end"]')
    assert ratings_of(first) == [1, 0, 1, 1, 0, 1, 1, 0, 1]
    assert page.locator(".step.rated").count() == 9

    # Undo stays exact at the same speed: each undo removes the rating just before it.
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#steps:not([data-assignment="{first.pk}"])')
    second = Assignment.objects.get(status="leased")
    type_keys(page, "33u2u23")
    page.wait_for_selector('#steps[data-current="3"]')
    page.wait_for_selector("#workspace:not(.htmx-request)")
    assert ratings_of(second) == [1, 0, 1]

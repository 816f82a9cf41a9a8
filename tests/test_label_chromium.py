"""In a real Chromium: labelling with the keyboard only, and the database afterwards.

Deterministic: every step waits for the element or attribute that shows the server's answer
arrived (``#steps[data-current=...]``, a new ``data-assignment``), never for a fixed time.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Assignment
from tests.factories import make_campaign, make_member, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = [
    "<script>window.__xss = 'script'</script>",
    "<img src=x onerror=\"window.__xss = 'img'\">",
    "$<img src=x onerror=\"window.__xss = 'math'\">$",
    r"\(\href{javascript:window.__xss='href'}{click}\)",
]


@pytest.fixture
def campaign():
    return make_campaign(slug="browser", instructions="Rate **every** step.")


@pytest.fixture
def labeller(live_server, page, client, campaign):
    """A logged-in annotator's page and a helper to open the labelling page."""
    user = make_member(campaign=campaign).user
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs

    def open_page():
        page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
        page.wait_for_selector("#workspace")
        if page.locator("#steps").count():
            # static/js/label.js shows the keys' help button once it has taken the page in
            # (htmx's onLoad): only then are keys heard. A CI run lost the first key once.
            page.wait_for_selector("[data-open-help]:not([hidden])")
        # The window survives htmx swaps; a full page load would drop this marker.
        page.evaluate("window.__marker = 'same page'")
        return page

    open_page.user = user
    return open_page


def current_is(page, value) -> None:
    page.wait_for_selector(f'#steps[data-current="{value}"]')


def press(page, key: str, then: str | int) -> None:
    """Press a key and wait until the steps show the state it leads to."""
    page.keyboard.press(key)
    current_is(page, then)


def next_solution(page, after: Assignment) -> None:
    page.wait_for_selector(f'#steps:not([data-assignment="{after.pk}"])')
    assert page.evaluate("window.__marker") == "same page"


def labels(assignment):
    return list(
        assignment.labels.order_by("step__index").values_list("rating", "flagged", "time_spent_ms")
    )


def test_a_whole_solution_with_the_keyboard_only(labeller, campaign):
    make_solution(campaign=campaign, steps=["Let $x_1 = 2$.", "b", "c", r"So \(x^2 = 4\)."])
    make_solution(campaign=campaign, steps=["the next solution"])
    page = labeller()
    assert page.locator("#steps .katex").count() == 1  # math rendered by KaTeX
    assert page.locator(".answer-box .katex").count() == 1
    assignment = Assignment.objects.get(status="leased")

    for key, then in [("3", 1), ("2", 2), ("3", 3), ("3", "end")]:
        press(page, key, then)
    assert page.locator(".step.rated").count() == 4
    assert page.locator(".step.rated .rating").all_inner_texts() == [
        "✓ +1 positive",
        "~ 0 neutral",
        "✓ +1 positive",
        "✓ +1 positive",
    ]
    page.keyboard.press("Enter")
    next_solution(page, assignment)
    assert "the next solution" in page.inner_text("#steps")
    assert page.locator(".notice").inner_text() == "Submitted."

    assignment.refresh_from_db()
    assert (assignment.status, assignment.finish_reason) == ("submitted", "solution")
    assert [(r, f) for r, f, _ in labels(assignment)] == [
        (1, False),
        (0, False),
        (1, False),
        (1, False),
    ]
    assert all(ms is not None and ms >= 0 for _, _, ms in labels(assignment))
    assert assignment.total_time_ms is not None


def test_keys_pressed_while_waiting_for_the_server_wait_their_turn(labeller, campaign):
    """Presses during a request are applied in order once its answer is shown, each to the
    step the page then shows (an undo to the rating just before it)."""
    make_solution(campaign=campaign, steps=["a", "b", "c", "d"])
    page = labeller()
    held, sent = [], []

    def hold_the_first(route):
        sent.append(route.request.url)
        if held:
            route.continue_()
        else:
            held.append(route)  # held until released below

    page.route("**/rate/", hold_the_first)
    with page.expect_request("**/rate/"):
        page.keyboard.press("3")
    for key in "23u":
        page.keyboard.press(key)
    # A selector wait, not wait_for_function (its polling evaluates a string: no eval under CSP).
    page.wait_for_selector("#workspace.htmx-request", state="attached")
    assert len(sent) == 1  # nothing else was sent while the first was in flight
    assert page.locator(".step.rated").count() == 0  # nor shown as rated
    held[0].continue_()
    current_is(page, 2)
    page.wait_for_selector("#workspace:not(.htmx-request)")
    current_is(page, 2)
    assert [r for r, _, _ in labels(Assignment.objects.get())] == [1, 0]


def test_undo_with_u_and_backspace_and_a_reload_resumes(labeller, campaign):
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    page = labeller()
    press(page, "3", 1)
    press(page, "1", "end")  # negative: stop at first error
    page.wait_for_selector("textarea[name=human_completion]")
    press(page, "u", 1)
    assert page.locator("textarea").count() == 0
    press(page, "2", 2)
    press(page, "Backspace", 1)
    page.reload()
    current_is(page, 1)
    assert page.inner_text(".progress") == "1 of 3 steps rated"
    assert [r for r, _, _ in labels(Assignment.objects.get())] == [1]


def test_flag_the_current_step_and_then_the_last_one(labeller, campaign):
    make_solution(campaign=campaign, steps=["a", "b"])
    page = labeller()
    page.keyboard.press("f")
    assert page.locator("[data-key-flag]").is_checked()
    press(page, "3", 1)
    assert page.locator("#step-0 .badge.flag").inner_text() == "⚑ unsure"
    press(page, "3", "end")
    page.keyboard.press("f")  # nothing left to rate: f flags the last rated step
    page.wait_for_selector("#step-1 .badge.flag")
    assert [(r, f) for r, f, _ in labels(Assignment.objects.get())] == [(1, True), (1, True)]
    page.keyboard.press("f")
    page.wait_for_selector("#step-1 .badge.flag", state="detached")
    assert [(r, f) for r, f, _ in labels(Assignment.objects.get())] == [(1, True), (1, False)]


def test_a_negative_step_ends_it_with_a_correction_typed_without_triggering_keys(
    labeller, campaign
):
    make_solution(campaign=campaign, steps=["2 + 2 = 4", "so 4 * 2 = 6", "hidden step"])
    make_solution(campaign=campaign, steps=["next"])
    page = labeller()
    assignment = Assignment.objects.get()
    press(page, "3", 1)
    press(page, "1", "end")
    assert "hidden step" not in page.inner_text("#steps")
    page.keyboard.press("c")
    correction = "4 * 2 = 8 (not 6). u s 1 2 3 f ?"
    page.keyboard.type(correction)
    assert page.locator("#correction").input_value() == correction
    assert not page.locator("#key-help").is_visible()
    assignment.refresh_from_db()
    assert assignment.status == "leased" and len(labels(assignment)) == 2
    page.keyboard.press("Escape")  # leave the box: keys work again
    page.keyboard.press("Enter")
    next_solution(page, assignment)
    assignment.refresh_from_db()
    assert (assignment.status, assignment.finish_reason) == ("submitted", "found_error")
    label = assignment.labels.get(step__index=1)
    assert (label.rating, label.human_completion["text"]) == (-1, correction)


def test_ctrl_enter_submits_from_the_correction_box(labeller, campaign):
    make_solution(campaign=campaign, steps=["wrong"])
    page = labeller()
    assignment = Assignment.objects.get()
    press(page, "1", "end")
    page.fill("#correction", "right")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(".empty")  # nothing left after this one
    assignment.refresh_from_db()
    assert assignment.labels.get().human_completion["text"] == "right"


def test_skip_with_s(labeller, campaign):
    make_solution(campaign=campaign, steps=["skip me"])
    make_solution(campaign=campaign, steps=["keep me"])
    page = labeller()
    first = Assignment.objects.get()
    page.keyboard.press("s")
    next_solution(page, first)
    assert "keep me" in page.inner_text("#steps")
    first.refresh_from_db()
    assert first.status == "skipped"


@pytest.mark.parametrize(
    ("button", "reason"), [("Give up", "give_up"), ("Bad problem", "bad_problem")]
)
def test_give_up_and_bad_problem_ask_first(labeller, campaign, button, reason):
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_solution(campaign=campaign, steps=["next"])
    page = labeller()
    first = Assignment.objects.get()
    press(page, "3", 1)
    page.get_by_text(f"{button}…").click()
    confirm = "Give up" if reason == "give_up" else "Report bad problem"
    page.get_by_role("button", name=confirm, exact=True).click()
    next_solution(page, first)
    first.refresh_from_db()
    assert (first.status, first.finish_reason) == ("submitted", reason)
    assert [r for r, _, _ in labels(first)] == [1]


def test_the_key_help_opens_with_question_mark(labeller, campaign):
    make_solution(campaign=campaign, steps=["a"])
    page = labeller()
    page.keyboard.press("?")
    assert page.locator("#key-help").is_visible()
    page.keyboard.press("3")  # keys do nothing behind the open help
    page.keyboard.press("Escape")
    assert not page.locator("#key-help").is_visible()
    assert Assignment.objects.get().labels.count() == 0


def test_script_and_img_payloads_stay_inert_text(labeller, campaign):
    payload = "\n\n".join(XSS)
    campaign.instructions = payload
    campaign.save()
    make_solution(campaign=campaign, steps=[*XSS, "last"])
    campaign.problems.update(text=payload, ground_truth_answer=XSS[1])
    page = labeller()
    for i in range(len(XSS)):
        press(page, "3", i + 1)
    page.click(".instructions summary")
    assert page.evaluate("window.__xss") is None
    assert page.dialogs == []
    assert page.locator("img[src=x], #workspace script, a[href^=javascript]").count() == 0
    text = page.inner_text("#steps")
    assert "<script>window.__xss = 'script'</script>" in text
    assert "<img src=x onerror=\"window.__xss = 'img'\">" in text


def test_an_expired_session_goes_to_the_login_page_instead_of_swapping_it_in(
    labeller, campaign, live_server
):
    from django.contrib.sessions.models import Session

    make_solution(campaign=campaign, steps=["a", "b"])
    page = labeller()
    Session.objects.all().delete()
    page.keyboard.press("3")
    page.wait_for_url("**/login/**")
    assert page.locator("#steps").count() == 0
    assert page.locator("input[name=username]").is_visible()
    assert not Assignment.objects.get().labels.exists()

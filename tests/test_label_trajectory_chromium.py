"""In a real Chromium: an agent trajectory of 12 turns with tool calls, labelled by keyboard only,
on a laptop and on a phone, never wider than the window; the database holds the keys pressed.

Deterministic as tests/test_label_chromium.py: each key waits for the server's answer to show
(``#steps[data-current=...]``), never for a fixed time.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from imports.pipeline import import_file
from labeling.models import Assignment
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KEYS = ["3", "3", "2", "3", "2", "3", "3", "3", "1", "2", "3", "3"]
RATING = {"1": -1, "2": 0, "3": 1}
# How far the document reaches past the window, in CSS pixels (0: it fits).
OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def twelve_turns(tmp_path):
    """The fixture's 12-turn repository task, without its labels (nobody holds it yet)."""
    lines = (FIXTURES / "agent_trajectories" / "agentprocessbench.jsonl").read_text()
    record = json.loads(lines.splitlines()[0])
    assert sum(m["role"] == "assistant" for m in record["messages"]) == 12
    for key in ("step_labels", "final_label"):
        record.pop(key)
    path = tmp_path / "twelve.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize("width", [1280, 390])
def test_a_trajectory_is_labelled_by_keyboard_without_sideways_scrolling(
    live_server, page, client, tmp_path, width
):
    campaign = make_campaign(slug=f"agents-{width}", trace_kind="agent", stop_at_first_error=False)
    import_file(twelve_turns(tmp_path), campaign=campaign, fmt="agentprocessbench", grade=False)
    user = make_member(campaign=campaign).user
    client.force_login(user)
    page.set_viewport_size({"width": width, "height": 900})
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    page.wait_for_selector("[data-open-help]:not([hidden])")

    # The task and the tools at the top; the turn's call highlighted, its long result folded.
    assert page.locator("#problem-title").inner_text() == "Task"
    assert page.locator(".trace-tools code").first.inner_text() == "bash"
    page.wait_for_selector(".tool-call code.hljs")
    assert page.locator(".tool-result-more").count() == 1  # 16 lines: folded after 6
    assert page.evaluate(OVERFLOW) <= 0

    for n, key in enumerate(KEYS):
        page.keyboard.press(key)
        page.wait_for_selector(f'#steps[data-current="{n + 1 if n + 1 < len(KEYS) else "end"}"]')
        assert page.evaluate(OVERFLOW) <= 0, f"wider than the window after turn {n + 1}"

    # Every result unfolded (what a reader may open) still fits.
    page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
    assert page.evaluate(OVERFLOW) <= 0
    page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = false)")

    page.keyboard.press("3")  # the final outcome: accomplished
    assert page.locator('[data-outcome="3"]').is_checked()
    assignment = Assignment.objects.get(annotator=user)
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#workspace:not([data-assignment="{assignment.pk}"])')

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    stored = list(assignment.labels.order_by("step__index").values_list("rating", flat=True))
    assert stored == [RATING[k] for k in KEYS]
    assert assignment.outcome_rating == 1
    assert page.evaluate(OVERFLOW) <= 0

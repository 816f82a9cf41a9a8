"""In a real Chromium: PRM800K's phase 1 mode with the keyboard only, and the export after it.

An imported phase 1 line brings its candidates. The annotator rates the three candidates of
step 1, continues with one, rates the two of step 2, writes their own step 2 (which gives the
answer) and submits; the PRM800K export of that work is imported into a fresh campaign and
comes back with the same steps, ratings and choices. Every wait is for the element or attribute
that shows the server's answer (``#steps[data-rated=...]``), never a fixed time.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from exports.formats import LabelPolicy, write_export
from imports.pipeline import import_file
from labeling.models import Assignment, Solution
from tests import phase1_data as data
from tests.factories import make_campaign, make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MINE = "So $2 + 12 = 14$."


def rated_is(page, value: str) -> None:
    page.wait_for_selector(f'#steps[data-rated="{value}"]')


def export(campaign, path):
    write_export(
        campaign=campaign, fmt="prm800k", out=path, policy=LabelPolicy(annotator_ids="username")
    )
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_phase_1_with_the_keyboard_only_and_its_export_round_trips(
    live_server, page, client, tmp_path
):
    campaign = make_campaign(slug="phase1", phase1_mode=True, overlap=2)
    import_file(data.write_line(tmp_path / "in.jsonl"), campaign=campaign, fmt="prm800k")
    user = make_member(campaign=campaign).user
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    page.wait_for_selector("[data-open-help]:not([hidden])")
    page.evaluate("window.__marker = 'same page'")

    # Step 1: three candidates, none of the imported labeler's ratings shown.
    assert page.locator("[data-candidate]").all_inner_texts()[0].startswith("A")
    assert page.locator("[data-candidate] .rating").count() == 0
    assert page.locator("[data-candidate] .katex").count() == 2  # KaTeX renders them
    for key, then in [("1", "0-A-1"), ("3", "0-A-1B1"), ("2", "0-A-1B1C0")]:
        page.keyboard.press(key)
        rated_is(page, then)
    # The best rated is highlighted; j/k move the highlight, Enter continues with it.
    assert page.locator("[data-candidate].selected").get_attribute("id").startswith("candidate-")
    page.keyboard.press("k")
    page.keyboard.press("j")
    assert data.STEP1[1].split(":")[0] in page.locator("[data-candidate].selected").inner_text()
    page.keyboard.press("Enter")
    rated_is(page, "1-")
    assert page.locator(".step.rated").count() == 1

    # Step 2: rate both candidates, then write one's own step instead.
    for key, then in [("3", "1-A1"), ("1", "1-A1B-1")]:
        page.keyboard.press(key)
        rated_is(page, then)
    page.keyboard.press("w")
    assert page.evaluate("document.activeElement.matches('[data-write]')")
    page.keyboard.type(MINE)
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("# Answer")
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("14")
    page.keyboard.press("Enter")
    page.wait_for_selector('#steps[data-current="end"]')
    assert "written by you" in page.locator(".step.rated").nth(1).inner_text()

    assignment = Assignment.objects.get(annotator=user)
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#workspace:not(:has(#steps[data-assignment="{assignment.pk}"]))')
    assert page.evaluate("window.__marker") == "same page"
    assert "Submitted." in page.locator("#workspace").inner_text()

    assignment.refresh_from_db()
    assert (assignment.status, assignment.finish_reason) == ("submitted", "solution")
    written = f"{MINE}\n\n# Answer\n\n14"
    grown = Solution.objects.get(pk=assignment.solution_id)
    assert list(grown.steps.values_list("text", flat=True)) == [data.STEP1[1], written]

    exported = export(campaign, tmp_path / "out.jsonl")
    ours = next(r for r in exported if r["labeler"] == user.username)
    assert ours["label"]["steps"] == [
        {
            "completions": [
                {"text": data.STEP1[0], "rating": -1, "flagged": False},
                {"text": data.STEP1[1], "rating": 1, "flagged": False},
                {"text": data.STEP1[2], "rating": 0, "flagged": False},
            ],
            "human_completion": None,
            "chosen_completion": 1,
        },
        {
            "completions": [
                {"text": data.STEP2[0], "rating": 1, "flagged": False},
                {"text": data.STEP2[1], "rating": -1, "flagged": False},
            ],
            "human_completion": {
                "text": written,
                "rating": None,
                "source": "human",
                "flagged": False,
            },
            "chosen_completion": None,
        },
    ]

    # Round trip: imported into a fresh campaign, the same lines come back.
    path = tmp_path / "exported.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in exported))
    fresh = make_campaign(slug="fresh")
    import_file(path, campaign=fresh, fmt="prm800k")
    again = export(fresh, tmp_path / "again.jsonl")
    by_labeler = lambda r: r["labeler"]  # noqa: E731
    assert sorted(again, key=by_labeler) == sorted(exported, key=by_labeler)
    twin = Solution.objects.get(campaign=fresh, content_hash=grown.content_hash)
    assert list(twin.steps.values_list("text", flat=True)) == [data.STEP1[1], written]

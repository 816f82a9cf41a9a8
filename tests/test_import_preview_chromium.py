"""In a real browser, the upload page previews a file's first solutions as split, math rendered."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from imports.models import ImportJob
from labeling.models import Membership, Solution
from tests.factories import make_campaign, make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD = {
    "problem": "When does Bobbi arrive?",
    "ground_truth_answer": "4:30 p.m.",
    "solutions": [
        {
            "text": "First, we convert to minutes:\n\\[\n7200 \\div 60 = 120\n\\]\n"
            "Next, we convert to hours:\n\\[\n120 \\div 60 = 2\n\\]\n"
            "Therefore she arrives at \\boxed{4:30 \\text{ p.m.}}."
        }
    ],
}


def test_the_preview_shows_the_steps_with_their_math_before_anything_is_imported(
    live_server, page, client, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = make_campaign(slug="preview")
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    path = tmp_path / "bobbi.jsonl"
    path.write_text(json.dumps(RECORD) + "\n")

    page.goto(live_server.url + reverse("imports:list", kwargs={"slug": campaign.slug}))
    page.set_input_files("input[name=file]", str(path))
    page.get_by_role("button", name="Preview the steps").click()

    steps = page.locator("#import-preview li.step")
    expect(steps).to_have_count(3)
    # KaTeX rendered the display formulas and the bare \boxed in the last step.
    expect(steps.nth(0).locator(".katex-display")).to_have_count(1)
    expect(steps.nth(2).locator(".katex")).to_have_count(1)
    assert page.url.endswith(f"/campaigns/{campaign.slug}/imports/")  # swapped in, no reload
    assert not ImportJob.objects.exists() and not Solution.objects.exists()


def test_the_preview_of_a_binary_file_says_why_as_the_upload_does(
    live_server, page, client, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = make_campaign(slug="preview-binary")
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    path = tmp_path / "data.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00binary")
    page.goto(live_server.url + reverse("imports:list", kwargs={"slug": campaign.slug}))
    page.set_input_files("input[name=file]", str(path))
    page.get_by_role("button", name="Preview the steps").click()
    said = page.locator("#import-preview [role=alert]")
    expect(said).to_contain_text("not JSON Lines text: nothing was imported")
    assert not ImportJob.objects.exists()

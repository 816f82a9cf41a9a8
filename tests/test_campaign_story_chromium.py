"""The whole story in a real Chromium, with a real Celery worker process.

A manager creates a campaign (screening required), uploads a file (imported by the worker),
and invites an annotator; the annotator signs up through the link, passes screening and labels;
a reviewer rejects the annotator's regular work; the manager's dashboard shows the new numbers
after a refresh (computed by the worker). Every wait is on something the page shows.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from playwright.sync_api import expect

from labeling.models import Assignment, Campaign, Membership, Review
from tests.conftest import FIXTURES
from tests.factories import make_member, make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.celery,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

WAIT_MS = 60_000  # a failure bound for the worker, not a performance assertion


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


@pytest.fixture
def upload_file(tmp_path):
    """Two real GSM8K problems: one model solution as a screening question (gold: all +1, the
    test's own reference), and one regular solution to label."""
    lines = (
        (FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl")
        .read_text()
        .splitlines()
    )
    records = []
    for i, line in enumerate(lines[:2]):
        source = json.loads(line)
        steps = source["6b_verification"]["solution"].split("\n")[:2]
        solution = {"steps": steps, "generator": "6b_verification"}
        if i == 0:
            solution |= {"kind": "screening", "gold_ratings": [1] * len(steps)}
        truth = source["ground_truth"].rsplit("A:", 1)[1].strip()
        records.append(
            {"problem": source["question"], "ground_truth_answer": truth, "solutions": [solution]}
        )
    path = tmp_path / "story.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def logged_in(browser, live_server, user):
    """A new browser context with ``user``'s session (its own: logging another user in on the
    same client would end the first one's session)."""
    client = Client()
    client.force_login(user)
    context = browser.new_context()
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return context.new_page()


def test_a_campaign_from_creation_to_a_rejected_assignment_on_the_dashboard(
    media, celery_worker_process, live_server, browser, upload_file
):
    url = live_server.url
    manager = logged_in(browser, live_server, make_user(username="maria"))

    # The manager creates a campaign that screens new annotators.
    manager.goto(url + reverse("labeling:campaign-create"))
    manager.fill("#id_name", "Story campaign")
    manager.fill("#id_instructions", "Rate **every** step.")
    manager.check("#id_requires_screening")
    manager.get_by_role("button", name="Create campaign").click()
    manager.wait_for_url("**/campaigns/story-campaign/imports/")
    campaign = Campaign.objects.get(slug="story-campaign")
    assert campaign.requires_screening

    # Uploads a file; the worker imports it while the row polls.
    manager.set_input_files("input[name=file]", str(upload_file))
    manager.select_option("select[name=format]", "jsonl")
    manager.get_by_role("button", name="Upload and import").click()
    done = manager.locator("tr.status-done")
    done.wait_for(timeout=WAIT_MS)
    assert "2 new solutions" in done.inner_text()

    # The dashboard before any labels: the worker computes the first figures, the page reloads.
    manager.goto(url + reverse("annotators:dashboard", kwargs={"slug": campaign.slug}))
    expect(manager.locator("#tile-labels .big")).to_have_text("0", timeout=WAIT_MS)
    expect(manager.locator("#tile-reviews .big")).to_have_text("0")

    # Invites an annotator with a single-use link.
    manager.goto(url + reverse("annotators:invitations", kwargs={"slug": campaign.slug}))
    manager.select_option("#id_role", "annotator")
    manager.get_by_role("button", name="Create link").click()
    link = manager.locator("#new-invitation-link").input_value()
    assert link.startswith(url + "/join/")

    # The annotator signs up through the link and joins.
    annotator = browser.new_context().new_page()
    annotator.goto(link)
    annotator.fill("#id_username", "ana")
    annotator.fill("#id_password1", "a-long-passphrase-7")
    annotator.fill("#id_password2", "a-long-passphrase-7")
    annotator.get_by_role("button", name="Sign up and join").click()
    annotator.wait_for_url(f"**/campaigns/{campaign.slug}/")
    assert "First, a few screening solutions" in annotator.inner_text("#screening-outcome")

    # Labels: the screening question first (rated as the reference), then the regular solution.
    annotator.get_by_role("link", name="Start labelling").click()
    annotator.wait_for_load_state("load")  # the page's keyboard script is running
    for _ in range(2):
        annotator.wait_for_selector("#steps[data-current='0']")
        served = annotator.get_attribute("#steps", "data-assignment")
        annotator.keyboard.press("3")
        annotator.wait_for_selector("#steps[data-current='1']")
        annotator.keyboard.press("3")
        annotator.wait_for_selector("#steps[data-current='end']")
        annotator.keyboard.press("Enter")
        annotator.wait_for_selector(
            f"#steps[data-assignment='{served}'] >> nth=0", state="detached"
        )
    ana = Membership.objects.get(user__username="ana", campaign=campaign)
    assert (ana.role, ana.screening, ana.screening_score) == ("annotator", "passed", 1.0)
    annotator.goto(url + reverse("labeling:campaign", kwargs={"slug": campaign.slug}))
    # The score is kappa with gold and first errors found (issue 26), 1.00 for a perfect rater.
    assert "Screening passed with a score of 1.00" in annotator.inner_text("#screening-outcome")
    regular = Assignment.objects.get(annotator=ana.user, solution__kind="regular")
    assert regular.status == "submitted"

    # A reviewer rejects the regular assignment with a comment.
    reviewer_user = make_member(
        campaign=campaign, role="reviewer", user=make_user(username="rita")
    ).user
    reviewer = logged_in(browser, live_server, reviewer_user)
    reviewer.goto(
        url + reverse("annotators:reviews", kwargs={"slug": campaign.slug}) + "?kind=regular"
    )
    reviewer.locator(f"#assignment-{regular.pk} a").first.click()
    reviewer.get_by_label("Reject").check()
    reviewer.fill("#id_comment", "Step 2 does not follow from step 1.")
    reviewer.get_by_role("button", name="Save review").click()
    reviewer.wait_for_url("**/reviews/")
    assert Review.objects.get(assignment=regular).decision == "rejected"

    # The manager refreshes the figures: the numbers change.
    manager.goto(url + reverse("annotators:dashboard", kwargs={"slug": campaign.slug}))
    expect(manager.locator("#tile-labels .big")).to_have_text("0")
    manager.get_by_role("button", name="Refresh now").click()
    expect(manager.locator("#tile-labels .big")).to_have_text("4", timeout=WAIT_MS)
    expect(manager.locator("#tile-reviews .big")).to_have_text("1")
    expect(manager.locator("#tile-qc .big")).to_have_text("–")
    assert "ana" in manager.locator("svg.chart").nth(2).text_content()  # throughput

    # And the annotator reads the outcome with its comment.
    annotator.goto(url + reverse("annotators:my-reviews", kwargs={"slug": campaign.slug}))
    row = annotator.locator(f"#my-review-{regular.pk}")
    assert "rejected" in row.inner_text() and "Step 2 does not follow" in row.inner_text()

"""In a real Chromium: reject means relabel, My work, and adjudication through to an export.

An annotator submits; a reviewer rejects with a comment; the solution is served to a second
annotator; the first reads the comment on My work and opens the solution as they rated it (math
rendered by KaTeX). Two annotators disagree on a step, a reviewer adjudicates it, and an
``adjudicated`` export carries the decision. Every wait is on something the page shows.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from playwright.sync_api import expect

from exports.formats import LabelPolicy, write_export
from labeling import queue
from labeling.models import Adjudication, Assignment, Review
from tests.factories import make_campaign, make_member, make_solution, make_user, submit_ratings

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def logged_in(browser, live_server, user):
    """A browser page in a context of its own with ``user``'s session."""
    client = Client()
    client.force_login(user)
    context = browser.new_context()
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return context.new_page()


def label_all_positive(page, url, slug, steps: int) -> int:
    """Label the served solution +1 everywhere with the keyboard; the assignment's id."""
    page.goto(url + reverse("labeling:label", kwargs={"slug": slug}))
    page.wait_for_load_state("load")
    page.wait_for_selector("#steps[data-current='0']")
    served = page.get_attribute("#steps", "data-assignment")
    for i in range(steps):
        page.keyboard.press("3")
        page.wait_for_selector(f"#steps[data-current='{i + 1 if i + 1 < steps else 'end'}']")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#steps[data-assignment='{served}'] >> nth=0", state="detached")
    return int(served)


def test_reject_relabel_my_work_and_an_adjudicated_export(live_server, browser, tmp_path):
    url = live_server.url
    campaign = make_campaign(slug="relabel", overlap=1)
    solution = make_solution(
        campaign=campaign, steps=["Let $x^2 = 4$.", "Then $x = \\pm 2$."], answer="2"
    )
    ann, bob = (make_member(campaign=campaign, user=make_user(username=n)).user for n in "ab")
    rev = make_member(campaign=campaign, role="reviewer", user=make_user(username="rev")).user

    # The first annotator labels and submits.
    first = logged_in(browser, live_server, ann)
    work_id = label_all_positive(first, url, campaign.slug, steps=2)
    work = Assignment.objects.get(pk=work_id)
    assert (work.solution_id, work.status) == (solution.pk, "submitted")

    # A reviewer rejects it with a comment.
    reviewer = logged_in(browser, live_server, rev)
    reviewer.goto(url + reverse("annotators:review", kwargs={"slug": campaign.slug, "pk": work_id}))
    reviewer.get_by_label("Reject").check()
    reviewer.fill("#id_comment", "Step 2 forgets the sign.")
    reviewer.get_by_role("button", name="Save review").click()
    reviewer.wait_for_url("**/reviews/")
    work.refresh_from_db()
    assert work.status == "rejected" and work.review.decision == Review.Decision.REJECTED

    # The solution is served again, to the second annotator.
    second = logged_in(browser, live_server, bob)
    second.goto(url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    second.wait_for_selector("#steps[data-current='0']")
    served = Assignment.objects.get(pk=second.get_attribute("#steps", "data-assignment"))
    assert (served.solution_id, served.annotator_id) == (solution.pk, bob.pk)

    # The first annotator reads the comment on My work and opens the solution.
    first.goto(url + reverse("labeling:campaign", kwargs={"slug": campaign.slug}))
    first.get_by_role("link", name="My work").click()
    row = first.locator(f"#my-work-{work_id}")
    expect(row).to_contain_text("Step 2 forgets the sign.")
    expect(row).to_contain_text("rejected")
    row.get_by_role("link").first.click()
    first.wait_for_url(f"**/my-work/{work_id}/")
    expect(first.locator("#my-review")).to_contain_text("Step 2 forgets the sign.")
    expect(first.locator("#step-1 .katex").first).to_be_visible()
    expect(first.locator("#step-0 .rating")).to_contain_text("+1")
    assert "b" not in first.locator(".my-steps").inner_text().split()  # no one else's labels

    # Two annotators disagree on step 2 of another solution; the reviewer adjudicates it.
    campaign.overlap = 2
    campaign.save()
    other = make_solution(campaign=campaign, steps=["$1+1=2$", "$2+2=5$"], priority=10)
    for user, ratings in ((ann, [1, 1]), (bob, [1, -1])):
        held = queue.assignment_next(campaign=campaign, annotator=user)
        if held.solution_id != other.pk:  # bob still holds the relabel lease: finish it first
            submit_ratings(assignment=held, annotator=user, ratings=[1, 1])
            held = queue.assignment_next(campaign=campaign, annotator=user)
        assert held.solution_id == other.pk
        submit_ratings(assignment=held, annotator=user, ratings=ratings)
    disputed = other.steps.get(index=1)

    reviewer.goto(url + reverse("labeling:campaign", kwargs={"slug": campaign.slug}))
    reviewer.get_by_role("link", name="Adjudication").click()
    reviewer.locator(f"#disputed-step-{disputed.pk} a").first.click()
    expect(reviewer.locator("table.ratings")).to_contain_text("a")
    expect(reviewer.locator("table.ratings tbody tr")).to_have_count(2)
    reviewer.get_by_label("−1 negative").check()
    reviewer.fill("#id_note", "2 + 2 is 4.")
    reviewer.get_by_role("button", name="Decide").click()
    reviewer.wait_for_url("**/adjudication/")
    decision = Adjudication.objects.get(step=disputed, replaced_at__isnull=True)
    assert (decision.rating, decision.note) == (-1, "2 + 2 is 4.")

    # The adjudicated export carries the decision; the majority would not have (a tie: more
    # negative, the same here), so adjudicate the other way too and compare.
    reviewer.goto(
        url + reverse("annotators:adjudication", kwargs={"slug": campaign.slug, "pk": disputed.pk})
    )
    reviewer.get_by_label("+1 positive").check()
    reviewer.get_by_role("button", name="Change the decision").click()
    reviewer.wait_for_url("**/adjudication/")
    assert Adjudication.objects.filter(step=disputed).count() == 2

    out = tmp_path / "adjudicated.jsonl"
    write_export(
        campaign=campaign, fmt="trl", out=out, policy=LabelPolicy(annotators="adjudicated")
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    by_prompt = {row["completions"][-1]: row["labels"] for row in rows}
    assert by_prompt["$2+2=5$"] == [True, True]

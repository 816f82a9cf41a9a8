"""In a real browser, a manager curates data with the data browser: searches a phrase, filters to
wrong answers with a negative step, opens one and compares two annotators' ratings, makes it a QC
question from one annotator's ratings, bulk-requeues the filtered set (as a background job) and
exports exactly that selection, checked row by row."""

from __future__ import annotations

import csv

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from labeling.curation import actions as curation
from labeling.models import Assignment, Membership, Solution, SolutionBulkAction, Step, StepLabel
from tests.factories import (
    export_name,
    make_campaign,
    make_labelled,
    make_member,
    make_problem,
    make_solution,
    make_user,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def eager_tasks():
    """Tasks run where they are sent (here the server's thread) instead of in the broker."""
    from stepwise.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.fixture
def world(live_server, page, client, settings, tmp_path, monkeypatch, eager_tasks):
    settings.MEDIA_ROOT = tmp_path / "media"
    # Any bulk action is a background job here, so the test goes through the job's path.
    monkeypatch.setattr(curation, "INLINE_MAX", 0)
    campaign = make_campaign(slug="curate", overlap=2)
    alice, bob = make_user(username="alice"), make_user(username="bob")
    for user in (alice, bob):
        make_member(campaign=campaign, user=user)
    problem = make_problem(
        campaign=campaign,
        text="Find the hypotenuse of the right triangle with legs $3$ and $4$.",
        ground_truth_answer="5",
    )
    target = make_solution(
        campaign=campaign,
        problem=problem,
        steps=["By Pythagoras, $c^2 = 3^2 + 4^2$.", "So $c^2 = 49$.", "# Answer\n\n7"],
        answer="7",
        answer_is_correct=False,
        is_open=False,
        assignment_count=2,
    )
    make_labelled(solution=target, ratings=[1, -1], annotator=alice)
    make_labelled(solution=target, ratings=[1, 0, -1], annotator=bob)
    twin = make_solution(
        campaign=campaign,
        problem=problem,
        steps=["The hypotenuse is $3 + 4$.", "# Answer\n\n7"],
        answer="7",
        answer_is_correct=False,
    )
    make_labelled(solution=twin, ratings=[-1], annotator=bob)
    right = make_solution(campaign=campaign, problem=problem, answer="5", answer_is_correct=True)
    make_labelled(solution=right, ratings=[1, 1, 1], annotator=alice)
    elsewhere = make_solution(campaign=campaign, answer="2", answer_is_correct=False)
    make_labelled(solution=elsewhere, ratings=[-1], annotator=alice)

    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return {
        "campaign": campaign,
        "target": target,
        "twin": twin,
        "right": right,
        "elsewhere": elsewhere,
        "alice": alice,
    }


def test_a_manager_finds_curates_requeues_and_exports_a_selection(live_server, page, world):
    campaign, target, twin = world["campaign"], world["target"], world["twin"]
    page.goto(live_server.url + reverse("labeling:browser", kwargs={"slug": campaign.slug}))
    rows = page.locator("table.browser tbody tr")
    expect(rows).to_have_count(4)

    page.fill("#f-q", '"right triangle"')
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(3)  # the problem's three solutions, not the other problem's
    page.locator("#filter-panel > summary").click()
    page.check("input[name=answer][value=wrong]")
    page.select_option("#f-negative", "true")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(2)
    assert "answer=wrong" in page.url and "negative=true" in page.url  # a shareable view
    expect(page.locator(f"#solution-{target.pk}")).to_be_visible()
    expect(page.locator(f"#solution-{twin.pk}")).to_be_visible()

    page.locator(f"#solution-{target.pk}").get_by_role("link", name=str(target.pk)).click()
    header = page.locator("table.labels-grid thead")
    expect(header).to_contain_text("alice")
    expect(header).to_contain_text("bob")
    step_2 = page.locator("#step-1 td.rating")
    expect(step_2).to_have_text(["−1 1 s", "0 1 s", "−1"])  # alice, bob, the consensus
    expect(page.locator("#step-0 .step-text .katex").first).to_be_visible()  # math renders

    alice_assignment = Assignment.objects.get(solution=target, annotator=world["alice"])
    page.select_option("#gold-kind", "qc")
    page.select_option("#gold-source", str(alice_assignment.pk))
    page.get_by_role("button", name="Make gold").click()
    expect(page.locator(".messages")).to_contain_text("quality control")
    target.refresh_from_db()
    assert target.kind == "qc"
    gold = (
        Step.objects.filter(solution=target).order_by("index").values_list("gold_rating", flat=True)
    )
    assert list(gold) == [1, -1, None]

    page.get_by_role("link", name="← Back to the browser").click()
    expect(rows).to_have_count(2)
    page.select_option("#bulk-action", "requeue")
    page.check("input[name=scope][value=all]")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".bulk-job")).to_contain_text("done")
    job = SolutionBulkAction.objects.get()
    assert (job.action, job.total, job.changed) == ("requeue", 2, 2)
    extra = dict(Solution.objects.values_list("pk", "extra_labels"))
    assert extra == {target.pk: 1, twin.pk: 1, world["right"].pk: 0, world["elsewhere"].pk: 0}
    target.refresh_from_db()
    assert target.is_open  # it wants a third label now

    page.select_option("#bulk-action", "export")
    page.check("input[name=scope][value=all]")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#export-selection")).to_contain_text("2 solutions")
    page.select_option("select[name=format]", "csv")
    page.get_by_role("button", name="Start export").click()
    # The POST redirects to the list without the selection; the job's row polls until done.
    # (A reload here raced that redirect: "Not attached to an active page" in CI.)
    expect(page.locator("#export-selection")).to_have_count(0)
    link = page.get_by_role("link", name="curate-csv.csv")
    expect(link).to_be_visible(timeout=30_000)
    with page.expect_download() as download:
        link.click()
    with open(download.value.path(), newline="") as f:
        got = sorted(
            (int(r["solution_id"]), r["annotator"], int(r["step_index"]), int(r["rating"]))
            for r in csv.DictReader(f)
        )
    want = sorted(
        (label.assignment.solution_id, export_name(campaign, label.assignment.annotator),
         label.step.index, label.rating)
        for label in StepLabel.objects.filter(
            assignment__solution__in=[target, twin], assignment__status="submitted"
        ).select_related("assignment__annotator", "step")
    )  # fmt: skip
    assert got == want
    assert len(got) == 6

"""In a real browser, a manager filters the solutions whose human labels the machine evidence
contradicts and sends exactly those back to people in bulk (the browser's requeue, a job)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from labeling.models import Membership, Solution, SolutionBulkAction, StepEvidence
from tests.factories import make_campaign, make_labelled, make_member, make_problem, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STEPS = ["We have $1 + 1 = 2$.", "Doubling gives $2 \\cdot 2 = 5$.", "# Answer\n\n5"]


def _rolled_out(campaign, n: int, *, reached: int) -> Solution:
    """A solution every step of which an annotator rated positive, with 8 rollouts from its
    second step of which ``reached`` reach the answer."""
    problem = make_problem(
        campaign=campaign, text=f"What is $(1+1) \\cdot 2$? ({n})", ground_truth_answer="4"
    )
    solution = make_solution(campaign=campaign, problem=problem, steps=STEPS, answer="5")
    make_labelled(solution=solution, ratings=[1, 1, 1])
    StepEvidence.objects.create(
        solution=solution,
        step=solution.steps.get(index=1),
        kind=StepEvidence.Kind.ROLLOUT,
        model="stub",
        value=reached / 8,
        samples=8,
        correct=reached,
    )
    return solution


def test_the_conflicting_solutions_go_back_to_people_in_bulk(live_server, page, client):
    campaign = make_campaign(slug="routing")
    conflicts = [_rolled_out(campaign, n, reached=0) for n in range(2)]  # rated positive, wrong
    agreed = _rolled_out(campaign, 2, reached=6)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    browser = reverse("labeling:browser", kwargs={"slug": campaign.slug})
    page.goto(live_server.url + browser + "?evidence=conflict")
    expect(page.locator("table.browser tbody tr")).to_have_count(2)
    expect(page.locator(f"#solution-{agreed.pk}")).to_have_count(0)

    page.select_option("#bulk-action", "requeue")
    page.check("input[name=scope][value=all]")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".bulk-job")).to_contain_text("done")

    job = SolutionBulkAction.objects.get()
    assert (job.action, job.total, job.changed) == ("requeue", 2, 2)
    assert job.selection == {"evidence": ["conflict"]}
    extra = dict(Solution.objects.values_list("pk", "extra_labels"))
    assert extra == {conflicts[0].pk: 1, conflicts[1].pk: 1, agreed.pk: 0}
    assert all(Solution.objects.get(pk=s.pk).is_open for s in conflicts)


def test_the_conflicts_go_to_adjudication_and_a_reviewer_finds_them_there(
    live_server, page, client
):
    campaign = make_campaign(slug="adjudicate")
    conflicts = [_rolled_out(campaign, n, reached=0) for n in range(2)]
    agreed = _rolled_out(campaign, 2, reached=6)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    browser = reverse("labeling:browser", kwargs={"slug": campaign.slug})
    page.goto(live_server.url + browser + "?evidence=conflict")
    expect(page.locator("table.browser tbody tr")).to_have_count(2)

    page.select_option("#bulk-action", "adjudicate")
    page.check("input[name=scope][value=all]")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".bulk-job")).to_contain_text("done")
    job = SolutionBulkAction.objects.get()
    assert (job.action, job.total, job.changed) == ("adjudicate", 2, 2)

    # The adjudication queue (a reviewer's page) lists the two conflicting steps, marked sent.
    page.goto(live_server.url + reverse("annotators:adjudications", kwargs={"slug": campaign.slug}))
    rows = page.locator("table.adjudications tbody tr")
    expect(rows).to_have_count(2)
    for solution in conflicts:
        step = solution.steps.get(index=1)
        row = page.locator(f"#disputed-step-{step.pk}")
        expect(row).to_contain_text("sent")
        expect(row).to_contain_text("step 2")
    assert not agreed.steps.filter(adjudication_request__isnull=False).exists()

    # Deciding one from there takes it off the open list.
    page.locator(f"#disputed-step-{conflicts[0].steps.get(index=1).pk} a").first.click()
    page.check("input[name=rating][value='-1']")
    page.get_by_role("button", name="Decide").click()
    expect(page.locator("table.adjudications tbody tr")).to_have_count(1)

"""In a real browser, a manager asks a model for rollouts from one step of a solution, reads the
result beside the human ratings, finds the solution among those whose labels the machines
contradict, and asks a judge about every solution of that filter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from labeling.models import Membership, StepEvidence
from machines.models import EvidenceJob
from tests.factories import make_campaign, make_labelled, make_member, make_problem, make_solution
from tests.generation_servers import Script, StubServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def eager_tasks():
    """Tasks run where they are sent (here the server's thread) instead of in the broker."""
    from stepwise.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def reply(body: dict) -> str:
    """Right (4) from a prefix without the wrong step, wrong after it; the judge names step 1."""
    if body.get("continue_final_message"):
        wrong = "= 5" in body["messages"][-1]["content"]
        return "# Answer\n\n5" if wrong else "# Answer\n\n4"
    return "The doubling is wrong. \\boxed{1}"


def test_a_manager_asks_for_rollouts_and_a_judge_and_finds_the_conflict(
    live_server, page, client, settings, eager_tasks
):
    campaign = make_campaign(slug="evidence")
    problem = make_problem(
        campaign=campaign, text="What is $(1+1) \\cdot 2$?", ground_truth_answer="4"
    )
    solution = make_solution(
        campaign=campaign,
        problem=problem,
        steps=["We have $1 + 1 = 2$.", "Doubling gives $2 \\cdot 2 = 5$.", "# Answer\n\n5"],
        answer="5",
        answer_is_correct=False,
    )
    make_labelled(solution=solution, ratings=[1, 1, 1])  # the annotator missed the error
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    with StubServer(Script(reply=reply)) as server:
        settings.STEPWISE_ENDPOINTS = [
            {"name": "sampler", "kind": "chat", "base_url": server.base_url, "models": ["stub"]}
        ]
        item = reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": solution.pk})
        page.goto(live_server.url + item)
        page.locator("#step-1 .rollout-form button").click()
        expect(page.locator(".messages")).to_contain_text("Evidence job")
        expect(page.locator("#step-1 td.evidence")).to_contain_text(
            "rollouts: 0 of 8 reach the answer"
        )
        expect(page.locator("#step-0 td.evidence")).not_to_contain_text("rollouts")

        browser = reverse("labeling:browser", kwargs={"slug": campaign.slug})
        page.goto(live_server.url + browser + "?evidence=conflict")
        rows = page.locator("table.browser tbody tr")
        expect(rows).to_have_count(1)
        expect(page.locator(f"#solution-{solution.pk}")).to_be_visible()

        page.get_by_role("link", name="Ask machines about these solutions").click()
        expect(page.locator("h1")).to_have_text("Machine evidence")
        page.select_option("#id_kind", "judge")
        page.get_by_role("button", name="Ask").click()
        expect(page.locator("table.imports tbody tr").first).to_contain_text(
            "1 of 1 solutions judged"
        )

        page.goto(live_server.url + item)
        expect(page.locator("#step-1 td.evidence")).to_contain_text("judge: first error here")
        if folder := os.environ.get("STEPWISE_SCREENSHOT_DIR"):
            page.screenshot(path=str(Path(folder) / "evidence-item.png"), full_page=True)
    assert EvidenceJob.objects.filter(status="done").count() == 2
    assert StepEvidence.objects.filter(solution=solution, kind="judge").count() == 2

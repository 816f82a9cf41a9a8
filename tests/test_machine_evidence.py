"""Machine evidence beside human labels (``machines.evidence``, ``labeling.models.evidence``):
rollouts from a step and a judge's first error, from a declared chat endpoint (a scripted HTTP
server in a thread of the test: ``tests.generation_servers``), stored per step, resumed without
asking twice, shown on the item page, filtered as conflicts, never shown to annotators.
"""

from __future__ import annotations

import math
import random
import threading

import pytest
from django.urls import reverse

from labeling.curation.filters import SolutionFilter
from labeling.models import Membership, Solution, StepEvidence
from machines.evidence import (
    EvidenceRefused,
    evidence_job_create,
    evidence_job_run,
    judge_first_error,
)
from machines.models import EvidenceJob
from tests.factories import (
    make_campaign,
    make_evidence,
    make_labelled,
    make_member,
    make_problem,
    make_solution,
)
from tests.generation_servers import Script, StubServer

STEPS = [
    "We have $1 + 1 = 2$.",
    "Doubling gives $2 \\cdot 2 = 5$.",  # the wrong step
    "So the answer is $5$.",
    "# Answer\n\n5",
]


@pytest.fixture(autouse=True)
def _declared(settings):
    settings.STEPWISE_ENDPOINTS = []
    settings.STEPWISE_GENERATION_BACKOFF_MS = 1
    return settings


def declare(settings, base_url: str) -> str:
    settings.STEPWISE_ENDPOINTS = [
        {"name": "sampler", "kind": "chat", "base_url": base_url, "models": ["stub"]}
    ]
    return "sampler"


def reply(body: dict) -> str:
    """A model that answers right (4) from a prefix without the wrong step and wrong (5) after
    it, and judges step 1 (0-based) the first wrong one."""
    messages = body["messages"]
    if body.get("continue_final_message"):
        assert messages[-1]["role"] == "assistant" and body["add_generation_prompt"] is False
        prefix = messages[-1]["content"]
        return "So it is 5.\n\n# Answer\n\n5" if "= 5" in prefix else "Then 4.\n\n# Answer\n\n4"
    assert "<step_1>" in messages[-1]["content"]
    return "Step 1 claims 2*2=5, which is wrong. \\boxed{1}"


def _solution(campaign=None):
    campaign = campaign or make_campaign()
    n = campaign.problems.count()
    problem = make_problem(
        campaign=campaign, text=f"What is $(1+1) \\cdot 2$? ({n})", ground_truth_answer="4"
    )
    return make_solution(campaign=campaign, problem=problem, steps=STEPS, answer="5")


def _evidence(solution) -> dict[tuple[int, str], StepEvidence]:
    return {(e.step.index, e.kind): e for e in StepEvidence.objects.filter(solution=solution)}


@pytest.mark.django_db
def test_rollouts_from_each_step_store_the_share_that_reaches_the_answer(settings):
    solution = _solution()
    with StubServer(Script(reply=reply)) as server:
        job = evidence_job_create(
            campaign=solution.campaign,
            created_by=None,
            kind="rollouts",
            endpoint=declare(settings, server.base_url),
            selection={"id": [solution.pk]},
            samples_per_step=4,
            concurrency=2,
            enqueue=False,
        )
        job = evidence_job_run(job=job)
        asked = len(server.script.requests)
    assert job.status == "done", job.errors
    # Every step but the last (nothing follows "# Answer"): 3 units of 4 samples.
    assert (job.requested, job.completed, job.failed, job.samples, asked) == (3, 3, 0, 12, 12)
    assert (job.prompt_tokens, job.completion_tokens) == (12 * 11, 12 * 7)
    got = _evidence(solution)
    assert sorted(got) == [(0, "rollout"), (1, "rollout"), (2, "rollout")]
    assert (got[0, "rollout"].value, got[0, "rollout"].correct, got[0, "rollout"].samples) == (
        1.0,
        4,
        4,
    )
    assert got[1, "rollout"].value == 0.0 and got[2, "rollout"].value == 0.0
    assert got[0, "rollout"].model == "stub" and got[0, "rollout"].job_ref == job.ref
    assert got[0, "rollout"].tokens == 4 * 18
    # The prefix is the steps up to and including the step, after the campaign's prompt.
    first = server.script.requests[0]["messages"]
    assert first[0]["role"] == "user" and "What is $(1+1) \\cdot 2$?" in first[0]["content"]


@pytest.mark.django_db
def test_the_judge_marks_steps_up_to_its_first_error(settings):
    solution = _solution()
    with StubServer(Script(reply=reply)) as server:
        job = evidence_job_run(
            job=evidence_job_create(
                campaign=solution.campaign,
                created_by=None,
                kind="judge",
                endpoint=declare(settings, server.base_url),
                selection={"id": [solution.pk]},
                enqueue=False,
            )
        )
        body = server.script.requests[0]
    assert job.status == "done" and (job.requested, job.completed) == (1, 1)
    assert body["temperature"] == 0.0 and "continue_final_message" not in body
    got = _evidence(solution)
    assert {k: e.value for k, e in got.items()} == {(0, "judge"): 1.0, (1, "judge"): 0.0}
    assert got[1, "judge"].says_wrong and got[1, "judge"].detail == {"first_error": 1}


def test_a_judges_answer_is_read_from_its_last_box():
    assert judge_first_error("first \\boxed{3}, no: \\boxed{ 1 }", 4) == 1
    assert judge_first_error("all fine \\boxed{-1}", 4) == -1
    assert judge_first_error("\\boxed{4}", 4) is None  # no such step
    assert judge_first_error("step two", 4) is None


@pytest.mark.django_db
def test_an_unreadable_verdict_fails_the_unit_and_says_why(settings):
    solution = _solution()
    with StubServer(Script(reply=lambda body: "I cannot tell.")) as server:
        job = evidence_job_run(
            job=evidence_job_create(
                campaign=solution.campaign,
                created_by=None,
                kind="judge",
                endpoint=declare(settings, server.base_url),
                selection={"id": [solution.pk]},
                enqueue=False,
            )
        )
    assert job.status == "failed" and job.failed == 1
    assert "names no step" in job.errors[-1]["message"]
    assert not StepEvidence.objects.exists()


@pytest.mark.django_db
def test_a_budget_stops_the_job_and_a_resumed_one_asks_only_for_what_is_missing(settings):
    solutions = [_solution() for _ in range(1)]
    campaign = solutions[0].campaign
    more = [_solution(campaign) for _ in range(2)]
    with StubServer(Script(reply=reply)) as server:
        job = evidence_job_create(
            campaign=campaign,
            created_by=None,
            kind="rollouts",
            endpoint=declare(settings, server.base_url),
            selection={"id": [s.pk for s in [*solutions, *more]]},
            samples_per_step=2,
            concurrency=1,
            budget_tokens=4 * 18,  # two units of two samples (18 tokens a sample)
            enqueue=False,
        )
        job = evidence_job_run(job=job)
        assert job.status == "done" and job.stopped_by_budget
        assert (job.requested, job.completed, len(server.script.requests)) == (9, 2, 4)
        # Lift the budget and run it again: only the 7 missing units are asked for.
        EvidenceJob.objects.filter(pk=job.pk).update(budget_tokens=0, status="pending")
        job.refresh_from_db()
        job = evidence_job_run(job=job)
        assert len(server.script.requests) == 4 + 7 * 2
    assert job.status == "done" and not job.stopped_by_budget
    assert (job.completed, job.samples) == (9, 18)
    assert StepEvidence.objects.filter(kind="rollout").count() == 9


@pytest.mark.django_db
def test_requests_that_cannot_be_jobs_are_refused_naming_the_field(settings):
    solution = _solution()
    declare(settings, "http://127.0.0.1:9/v1")
    base = {"campaign": solution.campaign, "created_by": None, "enqueue": False}
    with pytest.raises(EvidenceRefused) as e:
        evidence_job_create(**base, kind="rollouts", endpoint="nope", selection={"id": [1]})
    assert e.value.field == "endpoint"
    with pytest.raises(EvidenceRefused) as e:
        evidence_job_create(**base, kind="rollouts", endpoint="sampler", selection={})
    assert "Choose the solutions" in str(e.value)
    with pytest.raises(EvidenceRefused) as e:
        evidence_job_create(
            **base,
            kind="rollouts",
            endpoint="sampler",
            selection={"id": [solution.pk]},
            samples_per_step=0,
        )
    assert e.value.field == "samples_per_step"
    with pytest.raises(EvidenceRefused) as e:
        evidence_job_create(**base, kind="vote", endpoint="sampler", selection={"id": [1]})
    assert e.value.field == "kind"
    assert not EvidenceJob.objects.exists()


@pytest.mark.django_db
def test_the_conflict_filter_finds_labels_the_machines_contradict():
    campaign = make_campaign()
    rated_positive_rollouts_fail = _solution(campaign)
    make_labelled(solution=rated_positive_rollouts_fail, ratings=[1, 1, -1])
    make_evidence(rated_positive_rollouts_fail, 1, "rollout", 0.0)

    judge_error_nobody_marked = _solution(campaign)
    make_labelled(solution=judge_error_nobody_marked, ratings=[1, 0, 0, 1])
    make_evidence(judge_error_nobody_marked, 1, "judge", 0.0, samples=1)

    rated_negative_all_reach = _solution(campaign)
    make_labelled(solution=rated_negative_all_reach, ratings=[-1])
    make_evidence(rated_negative_all_reach, 0, "rollout", 1.0)

    agreeing = _solution(campaign)  # the humans found the error the machines found
    make_labelled(solution=agreeing, ratings=[1, -1])
    make_evidence(agreeing, 0, "rollout", 1.0)
    make_evidence(agreeing, 1, "rollout", 0.0)
    make_evidence(agreeing, 1, "judge", 0.0, samples=1)

    unlabelled_with_evidence = _solution(campaign)  # machines alone conflict with nobody
    make_evidence(unlabelled_with_evidence, 1, "judge", 0.0, samples=1)
    without = _solution(campaign)

    def matching(value: str) -> set[int]:
        chosen = SolutionFilter.from_params({"evidence": value})
        return set(
            chosen.apply(Solution.objects.filter(campaign=campaign)).values_list("pk", flat=True)
        )

    assert matching("conflict") == {
        rated_positive_rollouts_fail.pk,
        judge_error_nobody_marked.pk,
        rated_negative_all_reach.pk,
    }
    assert matching("none") == {without.pk}
    assert without.pk not in matching("any") and agreeing.pk in matching("any")


@pytest.mark.django_db
def test_managers_ask_from_the_item_page_see_the_evidence_and_annotators_never_do(client, settings):
    solution = _solution()
    campaign = solution.campaign
    declare(settings, "http://127.0.0.1:9/v1")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    annotator = make_member(campaign=campaign).user
    item = reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": solution.pk})
    ask = reverse("machines:evidence", kwargs={"slug": campaign.slug})
    form = {
        "kind": "rollouts",
        "model": "sampler:stub",
        "solution": solution.pk,
        "step": 2,
        "samples_per_step": 8,
        "budget_tokens": 0,
        "max_tokens": 1024,
        "next": item,
    }

    client.force_login(annotator)
    assert client.post(ask, form).status_code in (403, 404)
    assert client.get(ask).status_code in (403, 404)
    assert not EvidenceJob.objects.exists()

    client.force_login(manager)
    page = client.get(item).content.decode()
    assert "Continue from here" in page and 'id="evidence-form"' in page
    response = client.post(ask, form)
    assert response.status_code == 302 and response["Location"] == item
    job = EvidenceJob.objects.get()
    assert (job.kind, job.steps, job.selection, job.samples_per_step) == (
        "rollouts",
        [1],
        {"id": [str(solution.pk)]},
        8,
    )
    make_evidence(solution, 1, "rollout", 0.0)
    page = client.get(item).content.decode()
    assert "rollouts: 0 of 4 reach the answer" in page
    jobs = client.get(ask + f"?id={solution.pk}").content.decode()
    assert "steps rolled out from" in jobs and "1 solution of the browser" in jobs

    # The annotator labelling this solution sees no machine opinion.
    client.force_login(annotator)
    label = client.get(reverse("labeling:label", kwargs={"slug": campaign.slug}), follow=True)
    assert label.status_code == 200
    text = label.content.decode()
    assert "rollouts:" not in text and "judge:" not in text and "Continue from here" not in text


# The scripted chance that a completion from each step's prefix reaches the answer (4).
REACH = {0: 0.8, 1: 0.25, 2: 0.05}


def _binomial_tail_p(k: int, n: int, p: float) -> float:
    """The smaller tail probability of ``k`` successes in ``n`` at ``p`` (tails inclusive)."""
    pmf = [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]
    return min(sum(pmf[: k + 1]), sum(pmf[k:]))


@pytest.mark.django_db
def test_rollout_values_match_the_scripted_chances_within_their_binomial_intervals(settings):
    rng, lock = random.Random(29), threading.Lock()

    def chancy(body: dict) -> str:
        prefix = body["messages"][-1]["content"]
        step = 2 if "So the answer is" in prefix else 1 if "= 5" in prefix else 0
        with lock:
            reached = rng.random() < REACH[step]
        return "Then 4.\n\n# Answer\n\n4" if reached else "So 5.\n\n# Answer\n\n5"

    solution, n = _solution(), 64
    with StubServer(Script(reply=chancy)) as server:
        job = evidence_job_create(
            campaign=solution.campaign,
            created_by=None,
            kind="rollouts",
            endpoint=declare(settings, server.base_url),
            selection={"id": [solution.pk]},
            samples_per_step=n,
            concurrency=4,
            enqueue=False,
        )
        job = evidence_job_run(job=job)
    assert job.status == "done", job.errors
    got = _evidence(solution)
    for step, p in REACH.items():
        e = got[step, "rollout"]
        assert (e.samples, e.value) == (n, e.correct / n)
        # inside the scripted chance's two-sided 99.9% binomial interval
        assert _binomial_tail_p(e.correct, n, p) > 0.0005, (step, e.correct, p)

"""Answers no model endpoint should give, from a real local server (``HostileServer``): a huge
body, a gzip bomb, a drip, deep nesting. Each job that talks to an endpoint (generation, machine
evidence, scoring with a served PRM) fails within its limits with a reason, and this process's
memory stays under ``MEMORY_BOUND_MB`` while it does (``machines.client.endpoint_post`` is the
one place that reads an answer). Also: a strict server's 422 reaches the job and the log, and a
refusal of the continuation fields stops rollouts saying what to do."""

from __future__ import annotations

import time

import pytest

from machines.client import AnswerRefused, json_bounded, server_words
from machines.evidence import evidence_job_create, evidence_job_run
from machines.generation import generation_job_create, generation_job_run
from machines.models import EvidenceJob
from machines.served import scoring_job_run, scoring_job_start
from tests.factories import make_campaign, make_problem, make_solution
from tests.generation_servers import HOSTILE, HostileServer, PeakMemory, Script, StubServer

pytestmark = pytest.mark.django_db

# The most this process may grow while a job reads a hostile answer (the answers are 150 MB
# after decompression; the cap on one answer is STEPWISE_ENDPOINT_MAX_BYTES, 4 MiB).
MEMORY_BOUND_MB = 64
TIMEOUT_S = 1  # the endpoints' declared timeout: the deadline of each request
RETRIES = 1
# A job's limit: each try's deadline, plus the backoff (1 ms here) and its own work, with room for
# a loaded 2-core machine.
LIMIT_S = TIMEOUT_S * (RETRIES + 1) + 4
REASONS = {
    "huge": "larger than 4,194,304 bytes",
    "gzip-bomb": "larger than 4,194,304 bytes",
    "drip": f"no answer from bad within {TIMEOUT_S} s",
    "deep": "nested deeper than 64",
}


@pytest.fixture(autouse=True)
def _quick(settings):
    settings.STEPWISE_GENERATION_BACKOFF_MS = 1
    settings.STEPWISE_SCORING_BACKOFF_MS = 1
    settings.STEPWISE_SCORING_RETRIES = RETRIES


def declare(settings, url: str, kind: str = "chat") -> None:
    settings.STEPWISE_ENDPOINTS = [
        {
            "name": "bad",
            "kind": kind,
            "base_url": url,
            "models": ["m"],
            "timeout_s": TIMEOUT_S,
            "max_concurrency": 4,
        }
    ]


def _solution_campaign(**fields):
    campaign = make_campaign(**fields)
    problem = make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    make_solution(campaign=campaign, problem=problem, steps=["1 + 1 = 2.", "# Answer\n\n2"])
    return campaign


def run_generation(settings, url: str):
    declare(settings, f"{url}/v1")
    campaign = make_campaign()
    make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    job = generation_job_create(
        campaign=campaign,
        created_by=None,
        endpoint="bad",
        samples_per_problem=2,
        concurrency=2,
        max_retries=RETRIES,
        enqueue=False,
    )
    job = generation_job_run(job=job)
    return job, job.error + " " + " ".join(e["message"] for e in job.errors)


def run_evidence(settings, url: str):
    declare(settings, f"{url}/v1")
    campaign = _solution_campaign()
    job = evidence_job_create(
        campaign=campaign,
        created_by=None,
        kind="judge",
        endpoint="bad",
        selection={"id": [campaign.solutions.get().pk]},
        enqueue=False,
    )
    EvidenceJob.objects.filter(pk=job.pk).update(max_retries=RETRIES)
    job.refresh_from_db()
    job = evidence_job_run(job=job)
    return job, job.error


def run_scoring(settings, url: str):
    declare(settings, url, kind="pooling")
    campaign = _solution_campaign(al_scoring_endpoint="bad")
    job = scoring_job_run(job=scoring_job_start(campaign=campaign))
    return job, job.error


RUNS = {"generation": run_generation, "evidence": run_evidence, "scoring": run_scoring}


@pytest.mark.parametrize("mode", HOSTILE)
@pytest.mark.parametrize("kind", sorted(RUNS))
def test_a_hostile_answer_fails_the_job_in_time_with_a_reason_and_bounded_memory(
    settings, kind, mode
):
    with HostileServer(mode) as server, PeakMemory() as peak:
        started = time.monotonic()
        job, reason = RUNS[kind](settings, server.url)
        took = time.monotonic() - started
    assert job.status == "failed", (kind, mode, reason)
    assert REASONS[mode] in reason
    assert took < LIMIT_S, f"{kind} on {mode}: {took:.1f} s"
    assert peak.grown_mb < MEMORY_BOUND_MB, f"{kind} on {mode}: grew {peak.grown_mb:.0f} MB"
    if mode != "drip":  # a refused answer is not asked for again: the server answers the same
        assert server.requests <= 2


def test_deep_nesting_is_refused_before_the_parser_sees_it():
    with pytest.raises(AnswerRefused, match="nested deeper than 64"):
        json_bounded(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(AnswerRefused, match="more than 200,000 values"):
        json_bounded(b"[" + b"0," * 300_000 + b"0]")
    # Brackets inside strings are text, not nesting.
    assert json_bounded(b'{"a": "[[[[' + b"[" * 1000 + b'", "b": [1, 2]}') == {
        "a": "[[[[" + "[" * 1000,
        "b": [1, 2],
    }


def test_a_servers_own_words_are_kept_on_one_trimmed_line():
    assert server_words(b'{"error": {"message": "model not found"}}') == "model not found"
    fastapi = b'{"detail": "Unexpected fields in the request: {\'continue_final_message\'}"}'
    assert server_words(fastapi) == "Unexpected fields in the request: {'continue_final_message'}"
    assert server_words(b'{"detail": [{"loc": ["body"], "msg": "field required"}]}') == (
        "field required"
    )
    long = server_words(b"Bad\n\x00gateway " + b"x" * 1000)
    assert long.startswith("Bad gateway xxx") and len(long) == 300


def test_a_strict_servers_422_reaches_the_job_and_the_log(settings, caplog):
    """A generation job's sample refused 422: the job's errors and the worker's log say why."""
    said = "Unexpected fields in the request: {'top_k'}"
    with StubServer(Script(statuses=[422], error_message=said)) as server:
        declare(settings, server.base_url)
        campaign = make_campaign()
        make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
        job = generation_job_create(
            campaign=campaign,
            created_by=None,
            endpoint="bad",
            samples_per_problem=1,
            enqueue=False,
        )
        job = generation_job_run(job=job)
    assert job.status == "failed"
    assert job.errors[-1]["message"] == f"bad answered 422: {said}"
    assert said in job.error
    assert f"endpoint bad answered 422: {said}" in caplog.text


def test_rollouts_on_a_server_that_refuses_the_continuation_fields_stop_saying_what_to_do(
    settings, caplog
):
    said = "Unexpected fields in the request: {'continue_final_message', 'add_generation_prompt'}"
    with StubServer(Script(statuses=[422] * 50, error_message=said)) as server:
        declare(settings, server.base_url)
        campaign = _solution_campaign()
        job = evidence_job_create(
            campaign=campaign,
            created_by=None,
            kind="rollouts",
            endpoint="bad",
            selection={"id": [campaign.solutions.get().pk]},
            samples_per_step=8,
            concurrency=1,
            enqueue=False,
        )
        job = evidence_job_run(job=job)
        asked = len(server.script.requests)
    assert job.status == "failed"
    assert said in job.error and "vLLM" in job.error
    assert asked == 1  # stopped at the first refusal, not eight
    assert said in caplog.text


# --- phase 1 mode's pages ------------------------------------------------------------------------


def _phase1_at_a_bare_prefix(settings, url: str):
    """An annotator whose path has reached a prefix the tree has no candidates for."""
    from labeling import queue
    from tests.factories import make_member

    declare(settings, f"{url}/v1")
    campaign = make_campaign(phase1_mode=True, phase1_endpoint="bad", phase1_samples=2)
    problem = make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    make_solution(campaign=campaign, problem=problem, steps=["1 + 1 = 2.", "# Answer\n\n2"])
    annotator = make_member(campaign=campaign).user
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
    assert assignment is not None
    assignment.campaign = campaign
    view = queue.phase1_open(assignment=assignment)
    queue.candidate_rate(
        assignment=assignment, annotator=annotator, candidate_id=view.candidates[0].id, rating=1
    )
    queue.step_write(assignment=assignment, annotator=annotator, position=0, text="Mine.")
    return campaign, annotator


@pytest.mark.parametrize("mode", HOSTILE)
def test_a_phase1_page_never_waits_on_the_server_and_its_sampling_fails_in_time(
    settings, client, mode
):
    from machines.models import Phase1Sampling
    from machines.phase1_sampling import phase1_sampling_run

    with HostileServer(mode) as server:
        campaign, annotator = _phase1_at_a_bare_prefix(settings, server.url)
        client.force_login(annotator)
        started = time.monotonic()
        page = client.get(f"/campaigns/{campaign.slug}/label/")
        page_s = time.monotonic() - started
        assert page.status_code == 200
        html = page.content.decode()
        assert "Sampling candidates for step 2" in html and "hx-get" in html
        assert page_s < 3, f"the page waited {page_s:.1f} s"  # never the server's drip
        assert server.requests == 0  # the page asked nothing: a worker does

        job = Phase1Sampling.objects.get()
        status_url = f"/campaigns/{campaign.slug}/jobs/phase1-sampling/{job.pk}/?state=pending"
        polled = client.get(status_url, headers={"HX-Request": "true"})
        assert polled.status_code == 200 and "Sampling candidates" in polled.content.decode()
        with PeakMemory() as peak:
            started = time.monotonic()
            job = phase1_sampling_run(job=job)
            took = time.monotonic() - started
        asked = server.requests
    assert job.status == "failed"
    assert REASONS[mode] in job.error
    assert took < TIMEOUT_S + 4  # one deadline for all of a prefix's requests
    assert peak.grown_mb < MEMORY_BOUND_MB
    assert asked == 1
    polled = client.get(status_url, headers={"HX-Request": "true"})
    assert polled.headers.get("HX-Refresh") == "true"  # the page reloads with the outcome
    again = client.get(f"/campaigns/{campaign.slug}/label/").content.decode()
    assert "Candidates could not be sampled (" in again and REASONS[mode] in again
    assert "hx-get" not in again.split("Step 2")[-1].split("</li>")[0]
    assert Phase1Sampling.objects.count() == 1  # shown, not asked again at once


def test_readiness_names_a_declared_endpoint_whose_key_variable_is_unset(
    settings, monkeypatch, admin_client
):
    from stepwise.observability import readiness

    settings.STEPWISE_ENDPOINTS = [
        {"name": "gpu", "kind": "chat", "base_url": "http://gpu:8000/v1", "models": ["m"]},
        {
            "name": "hosted",
            "kind": "chat",
            "base_url": "https://api.example/v1",
            "models": ["m"],
            "key_env": "STEPWISE_TEST_HOSTED_KEY",
        },
    ]
    monkeypatch.delenv("STEPWISE_TEST_HOSTED_KEY", raising=False)
    _, results, errors = readiness()
    assert results["endpoint_keys"] == "failed"
    assert errors["endpoint_keys"] == (
        "LookupError: key variables not set for: hosted (STEPWISE_TEST_HOSTED_KEY)"
    )
    body = admin_client.get("/readyz").json()
    assert "endpoint_keys" in body["failed"] and "hosted" in body["errors"]["endpoint_keys"]
    monkeypatch.setenv("STEPWISE_TEST_HOSTED_KEY", "k")
    assert readiness()[1]["endpoint_keys"] == "ok"


@pytest.mark.slow
def test_a_real_strict_server_refusing_rollouts_stops_the_job_with_its_words(
    settings, tmp_path, caplog
):
    """``transformers serve`` (NOTES.md's recipe: a tiny random model built here) answers 422
    to the continuation fields; the rollouts stop at the first, saying what to do, and its
    judge (no continuation) still runs."""
    from tests.generation_servers import TransformersServe, build_tiny_model

    folder = build_tiny_model(tmp_path / "tiny")
    with TransformersServe(folder, tmp_path / "serve.log") as server:
        settings.STEPWISE_ENDPOINTS = [
            {
                "name": "bad",
                "kind": "chat",
                "base_url": server.base_url,
                "models": [str(folder)],
                "timeout_s": 60,
            }
        ]
        campaign = _solution_campaign()
        selection = {"id": [campaign.solutions.get().pk]}
        rollouts = evidence_job_create(
            campaign=campaign,
            created_by=None,
            kind="rollouts",
            endpoint="bad",
            selection=selection,
            samples_per_step=4,
            max_tokens=8,
            concurrency=1,
            enqueue=False,
        )
        rollouts = evidence_job_run(job=rollouts)
        judge = evidence_job_create(
            campaign=campaign,
            created_by=None,
            kind="judge",
            endpoint="bad",
            selection=selection,
            max_tokens=8,
            enqueue=False,
        )
        judge = evidence_job_run(job=judge)
    assert rollouts.status == "failed"
    assert "bad answered 422: Unexpected fields in the request" in rollouts.error
    assert "continue_final_message" in rollouts.error and "vLLM" in rollouts.error
    assert "endpoint bad answered 422: Unexpected fields" in caplog.text
    # The judge asks without them: the server answers (random text names no step, so the
    # unit fails for that reason, not for a refusal).
    assert "422" not in judge.error and "422" not in str(judge.errors)

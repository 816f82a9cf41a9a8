"""Generation jobs: K solutions per problem from an OpenAI-compatible endpoint, imported in batches.

Fast tests talk to a scripted HTTP server in a thread of the test (``tests.generation_servers``);
the ``slow`` ones start real processes: ``transformers serve`` on a tiny random model built by the
test, and ``manage.py generate_solutions`` killed half way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from labeling import events
from labeling.models import Solution, Step
from machines import generation
from machines.generation import GenerationRefused, generation_job_create, generation_job_run
from machines.models import PRM800K_PROMPT, GenerationJob, ReceivedSample
from tests.conftest import database_url
from tests.factories import make_campaign, make_problem, make_solution
from tests.generation_servers import (
    Script,
    StubServer,
    TransformersServe,
    build_tiny_model,
)
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_waiting(settings):
    settings.STEPWISE_GENERATION_BACKOFF_MS = 1


_SETTINGS = []  # the test's settings fixture, for _job to declare endpoints with


@pytest.fixture(autouse=True)
def _declared(settings):
    settings.STEPWISE_ENDPOINTS = []
    _SETTINGS[:] = [settings]
    yield
    _SETTINGS.clear()


def declare(base_url: str, *, models=("stub", "m"), **extra) -> str:
    """Declare ``base_url`` as a chat endpoint (as the operator would) and return its name."""
    settings = _SETTINGS[0]
    for entry in settings.STEPWISE_ENDPOINTS:
        same = entry["base_url"] == base_url and tuple(entry["models"]) == tuple(models)
        if same and all(entry.get(k) == v for k, v in extra.items()):
            return entry["name"]
    name = f"ep{len(settings.STEPWISE_ENDPOINTS)}"
    entry = {"name": name, "kind": "chat", "base_url": base_url, "models": list(models)}
    settings.STEPWISE_ENDPOINTS = [*settings.STEPWISE_ENDPOINTS, entry | extra]
    return name


def _campaign(problems: int = 2, truth: str = "2"):
    campaign = make_campaign()
    for i in range(problems):
        make_problem(
            campaign=campaign, text=f"Problem {i}: what is $1+1$?", ground_truth_answer=truth
        )
    return campaign


def _job(campaign, base_url: str, *, key_env: str = "", **kwargs) -> GenerationJob:
    """A job on the endpoint declared at ``base_url`` (declared here if it is not yet)."""
    options = {"model": "stub", "samples_per_problem": 3, "concurrency": 2} | kwargs
    extra = {"key_env": key_env} if key_env else {}
    name = declare(base_url, models=(options["model"], "m"), **extra)
    return generation_job_create(
        campaign=campaign, created_by=None, endpoint=name, enqueue=False, **options
    )


# --- a job from start to end ---------------------------------------------------------------------


@pytest.mark.django_db
def test_it_writes_split_graded_queued_solutions_and_counts_tokens():
    campaign = _campaign(problems=2)
    published = []

    def listener(sender, **payload):
        published.append(payload)

    events.solutions_imported.connect(listener)
    try:
        with StubServer() as server:
            job = generation_job_run(job=_job(campaign, server.base_url))
    finally:
        events.solutions_imported.disconnect(listener)

    assert job.status == "done"
    assert (job.requested, job.completed, job.failed, job.solutions_created) == (6, 6, 0, 6)
    assert (job.prompt_tokens, job.completion_tokens) == (66, 42)
    assert job.progress == 1.0
    solutions = Solution.objects.filter(campaign=campaign, source="generation")
    assert solutions.count() == 6
    keys = set(solutions.values_list("source_ref", flat=True))
    assert keys == {job.sample_key(p, i) for p, _ in job.plan for i in range(3)}
    for solution in solutions:
        assert solution.generator == "stub"
        assert solution.answer == "2" and solution.answer_is_correct is True
        assert solution.is_open
        steps = list(solution.steps.values_list("text", "raw_text"))
        # auto: a paragraph of chained calculations is cut after each formula, which stays with
        # its sentence; the calculator note is hidden but kept; PRM800K's answer heading stays
        # with the answer.
        assert [t for t, _ in steps][1:] == [
            "First we compute the sum:\n\\[1 + 1 = 2\\]",
            "Then we check it:\n\\[2 - 1 = 1\\]",
            "With a calculator note: 2 - 1 = 1",
            "# Answer\n\n2",
        ]
        assert steps[3][1] == "With a calculator note: 2 - 1 = <<2-1=1>>1"
    assert sum(p["solutions_created"] for p in published) == 6
    assert all(p["campaign_id"] == campaign.pk for p in published)


@pytest.mark.django_db
def test_the_prompt_follows_the_template_and_the_sampling_settings():
    campaign = _campaign(problems=1)
    with StubServer() as server:
        job = _job(
            campaign,
            server.base_url,
            samples_per_problem=1,
            prompt_template="Q: {problem}\nA:",
            temperature=0.7,
            top_p=0.9,
            max_tokens=77,
        )
        generation_job_run(job=job)
        body = server.script.requests[0]
    assert body["messages"] == [{"role": "user", "content": "Q: Problem 0: what is $1+1$?\nA:"}]
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["model"]) == (
        0.7,
        0.9,
        77,
        "stub",
    )


@pytest.mark.django_db
def test_the_default_prompt_is_prm800ks_then_the_campaigns_last_one():
    campaign = _campaign(problems=1)
    assert generation.default_template(campaign) == PRM800K_PROMPT
    assert "# Answer" in PRM800K_PROMPT and "{problem}" in PRM800K_PROMPT
    _job(campaign, "http://localhost:8000/v1", prompt_template="Solve: {problem}")
    assert generation.default_template(campaign) == "Solve: {problem}"


@pytest.mark.django_db
def test_a_429_then_200_is_retried_and_counted():
    campaign = _campaign(problems=1)
    with StubServer(Script(statuses=[429, 503])) as server:
        job = generation_job_run(job=_job(campaign, server.base_url, samples_per_problem=1))
        asked = len(server.script.requests)
    assert job.status == "done"
    assert (job.completed, job.retries, asked) == (1, 2, 3)
    assert Solution.objects.filter(campaign=campaign).count() == 1


@pytest.mark.django_db
def test_a_sample_that_keeps_failing_is_reported_and_the_job_can_be_resumed():
    campaign = _campaign(problems=1)
    with StubServer(Script(statuses=[500] * 3)) as server:
        job = _job(campaign, server.base_url, samples_per_problem=2, concurrency=1, max_retries=1)
        job = generation_job_run(job=job)
        assert (job.status, job.completed, job.failed) == ("done", 1, 1)
        assert "500" in job.errors[0]["message"]
        job = generation.generation_job_resume(job=job, enqueue=False)
        job = generation_job_run(job=job)
    assert (job.status, job.completed, job.solutions_created) == ("done", 2, 2)
    assert Solution.objects.filter(campaign=campaign).count() == 2


@pytest.mark.django_db
def test_a_client_error_is_not_retried():
    campaign = _campaign(problems=1)
    with StubServer(Script(statuses=[400])) as server:
        job = generation_job_run(job=_job(campaign, server.base_url, samples_per_problem=1))
        assert len(server.script.requests) == 1
    assert job.status == "failed" and job.retries == 0


@pytest.mark.django_db
def test_a_killed_worker_leaves_its_batches_and_a_resume_adds_only_the_rest(monkeypatch):
    campaign = _campaign(problems=2)
    monkeypatch.setattr(generation, "BATCH", 5)
    calls = {"n": 0}
    real = generation._BatchWriter.flush

    def dies_on_third_batch(self, final_status=None):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # stands for SIGKILL: no handler of the job runs
        return real(self, final_status)

    with StubServer() as server:
        job = _job(campaign, server.base_url, samples_per_problem=10)
        monkeypatch.setattr(generation._BatchWriter, "flush", dies_on_third_batch)
        with pytest.raises(KeyboardInterrupt):
            generation_job_run(job=job)
        job.refresh_from_db()
        assert job.status == "running"
        assert Solution.objects.filter(campaign=campaign).count() == 10
        with pytest.raises(GenerationRefused):  # its heartbeat is fresh: it looks alive
            generation.generation_job_resume(job=job, enqueue=False)
        monkeypatch.setattr(generation._BatchWriter, "flush", real)
        before = len(server.script.requests)
        job = generation.generation_job_resume(job=job, enqueue=False, force=True)
        job = generation_job_run(job=job)
        asked_again = len(server.script.requests) - before

    assert job.status == "done"
    assert asked_again == 5  # only the samples never received (the lost batch is imported)
    refs = list(Solution.objects.filter(campaign=campaign).values_list("source_ref", flat=True))
    assert len(refs) == len(set(refs)) == 20
    assert job.solutions_created == 20


@pytest.mark.django_db
def test_the_import_path_skips_a_sample_key_it_has_even_with_other_text():
    from imports.pipeline import import_solutions
    from imports.records import ProblemIn, SolutionIn

    campaign = _campaign(problems=1)
    problem = ProblemIn(text="Problem 0: what is $1+1$?", ground_truth_answer="2")
    first = SolutionIn(problem=problem, steps=["a"], answer="2", source_ref="k1", key="k1")
    again = SolutionIn(problem=problem, steps=["b"], answer="2", source_ref="k1", key="k1")
    import_solutions([first], campaign=campaign, source="generation")
    result, created = import_solutions([again], campaign=campaign, source="generation")
    assert (created, result.solutions_existing) == ([], 1)
    assert Solution.objects.filter(campaign=campaign).count() == 1


@pytest.mark.django_db
def test_fewer_than_k_asks_only_for_what_each_problem_lacks():
    campaign = _campaign(problems=2)
    first, second = campaign.problems.order_by("pk")
    make_solution(campaign=campaign, problem=first)
    make_solution(campaign=campaign, problem=first)
    make_solution(campaign=campaign, problem=second)
    with StubServer() as server:
        job = _job(campaign, server.base_url, samples_per_problem=2, selection="fewer_than_k")
        job = generation_job_run(job=job)
    assert job.plan == [[second.pk, 1]]
    assert Solution.objects.filter(problem=second, source="generation").count() == 1


@pytest.mark.django_db
def test_a_filter_selects_problems_by_subject_and_level():
    campaign = make_campaign()
    make_problem(campaign=campaign, text="a", subject="Algebra", level="3")
    wanted = make_problem(campaign=campaign, text="b", subject="Geometry", level="3")
    job = _job(
        campaign,
        "http://localhost:1/v1",
        selection="filter",
        problem_filter={"subject": "geometry", "level": "Level 3"},
    )
    assert generation.make_plan(job) == [[wanted.pk, 3]]
    with pytest.raises(GenerationRefused):
        _job(campaign, "http://localhost:1/v1", selection="filter", problem_filter={})


@pytest.mark.django_db
def test_a_reasoning_models_thinking_is_split_into_paragraphs():
    import httpx

    campaign = _campaign(problems=1)

    def answer(request: httpx.Request) -> httpx.Response:
        message = {
            "role": "assistant",
            "reasoning_content": "Hmm, one plus one.\n\nThat is two.",
            "content": "The sum is $2$.\n\n# Answer\n\n2",
        }
        return httpx.Response(
            200, json={"choices": [{"message": message, "finish_reason": "stop"}], "usage": {}}
        )

    job = _job(campaign, "http://model.test/v1", samples_per_problem=1)
    job = generation_job_run(job=job, client=httpx.Client(transport=httpx.MockTransport(answer)))
    solution = Solution.objects.get(campaign=campaign)
    assert list(solution.steps.values_list("text", flat=True)) == [
        "Hmm, one plus one.",
        "That is two.",
        "The sum is $2$.",
        "# Answer\n\n2",
    ]
    assert solution.answer_is_correct is True


# --- security ------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/v1",
        "gopher://127.0.0.1:70/",
        "http://user:secret@example.com/v1",
        "http:///v1",
        "localhost:8000/v1",
        "http://example.com/v1?x=1",
        "",
    ],
)
def test_a_free_form_url_that_is_not_a_plain_http_url_is_refused(url, settings):
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["example.com", "127.0.0.0/8"]
    with pytest.raises(GenerationRefused):
        generation_job_create(
            campaign=_campaign(problems=1), created_by=None, base_url=url, model="m", enqueue=False
        )
    assert not GenerationJob.objects.exists()


@pytest.mark.django_db
def test_a_job_names_a_declared_endpoint_and_one_of_its_models(settings):
    campaign = _campaign(problems=1)
    with pytest.raises(
        GenerationRefused, match="No OpenAI-compatible chat completions endpoint is declared"
    ):
        generation_job_create(campaign=campaign, created_by=None, endpoint="vllm", enqueue=False)
    name = declare("http://vllm.internal:8000/v1", models=("qwen-math", "qwen-72b"))
    job = generation_job_create(campaign=campaign, created_by=None, endpoint=name, enqueue=False)
    assert (job.endpoint, job.base_url, job.model) == (name, "", "qwen-math")
    with pytest.raises(GenerationRefused, match="serves qwen-math, qwen-72b") as refused:
        generation_job_create(
            campaign=campaign, created_by=None, endpoint=name, model="gpt-x", enqueue=False
        )
    assert refused.value.field == "model"
    with pytest.raises(GenerationRefused, match="No endpoint 'other' is declared"):
        generation_job_create(campaign=campaign, created_by=None, endpoint="other", enqueue=False)


@pytest.mark.django_db
def test_free_form_urls_are_refused_unless_the_operator_allows_their_host(settings):
    campaign = _campaign(problems=1)

    def create(url):
        return generation_job_create(
            campaign=campaign, created_by=None, base_url=url, model="m", enqueue=False
        )

    with pytest.raises(GenerationRefused, match="choose one by name"):
        create("http://127.0.0.1:8000/v1")
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["vllm.internal"]
    with pytest.raises(GenerationRefused, match="STEPWISE_ENDPOINT_HOSTS"):
        create("http://127.0.0.1:8000/v1")
    settings.STEPWISE_ENDPOINT_HOSTS = ["127.0.0.1/32"]
    job = create("http://127.0.0.1:8000/v1")
    assert (job.endpoint, job.base_url) == ("", "http://127.0.0.1:8000/v1")


@pytest.mark.django_db
def test_the_key_comes_from_the_declaration_and_is_never_stored_or_shown(monkeypatch):
    secret = "sk-test-5e3c7a9b1d"
    monkeypatch.setenv("STEPWISE_GENERATION_API_KEY", secret)
    campaign = _campaign(problems=1)
    # The endpoint echoes the key in its error (and a part of it); the job keeps neither.
    script = Script(statuses=[401, 401], error_message=f"bad key {secret} ({secret[:10]}...)")
    with StubServer(script) as server:
        job = _job(
            campaign,
            server.base_url,
            samples_per_problem=2,
            concurrency=1,
            key_env="STEPWISE_GENERATION_API_KEY",
        )
        job = generation_job_run(job=job)
        sent = [h.get("Authorization") for h in server.script.headers]
    assert sent == [f"Bearer {secret}"] * 2
    assert job.failed == 2
    assert "[key]" in job.errors[0]["message"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM imports_generationjob")
        stored = json.dumps(cursor.fetchall(), default=str)
    assert secret not in stored and secret[:10] not in stored


@pytest.mark.django_db
def test_a_key_variable_the_worker_lacks_fails_the_job_at_once(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    campaign = _campaign(problems=1)
    with StubServer() as server:
        job = _job(campaign, server.base_url, key_env="OPENAI_API_KEY")
        job = generation_job_run(job=job)
        assert server.script.requests == []
    assert job.status == "failed"
    assert "no OPENAI_API_KEY" in job.errors[-1]["message"]


@pytest.mark.django_db
def test_a_job_from_before_declarations_runs_on_the_endpoint_declared_at_its_url():
    """Jobs made before endpoints were declared stored a URL: resumed, they run on the
    declared endpoint with that URL (and its key), else fail with the reason, asking nothing."""
    campaign = _campaign(problems=1)
    with StubServer() as server:
        old = GenerationJob.objects.create(
            campaign=campaign,
            base_url=server.base_url,
            model="stub",
            samples_per_problem=1,
            status="failed",
        )
        job = generation.generation_job_resume(job=old, enqueue=False)
        job = generation_job_run(job=job)
        assert job.status == "failed"
        assert "not a declared endpoint" in job.errors[-1]["message"]
        assert server.script.requests == []
        declare(server.base_url)
        job = generation.generation_job_resume(job=job, enqueue=False)
        job = generation_job_run(job=job)
        assert len(server.script.requests) == 1
    assert (job.status, job.solutions_created) == ("done", 1)


@pytest.mark.django_db
def test_a_job_whose_endpoint_is_no_longer_declared_fails_saying_so(settings):
    campaign = _campaign(problems=1)
    with StubServer() as server:
        job = _job(campaign, server.base_url, samples_per_problem=1)
        settings.STEPWISE_ENDPOINTS = []
        job = generation_job_run(job=job)
        assert server.script.requests == []
    assert job.status == "failed"
    assert "is no longer declared" in job.errors[-1]["message"]


# --- the command ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_command_generates_and_says_what_it_did(capsys):
    campaign = _campaign(problems=2)
    with StubServer() as server:
        call_command(
            "generate_solutions",
            f"--campaign={campaign.slug}",
            f"--endpoint={declare(server.base_url)}",
            "--model=stub",
            "-k",
            "2",
            "--split=paragraphs",
        )
    out = capsys.readouterr().out
    assert "done; 4 of 4 samples, 4 new solutions, 0 failed" in out
    job = GenerationJob.objects.get()
    assert job.split == "paragraphs"
    # paragraphs: the formula's paragraph is one step, the heading and answer are two
    assert Step.objects.filter(solution__campaign=campaign, text="# Answer").count() == 4


@pytest.mark.django_db
def test_the_command_refuses_a_bad_request_and_resumes_a_job():
    campaign = _campaign(problems=1)
    with pytest.raises(CommandError, match="choose one by name"):
        call_command(
            "generate_solutions", f"--campaign={campaign.slug}", "--base-url=file:///x", "--model=m"
        )
    declare("http://vllm.internal:8000/v1")
    with pytest.raises(
        CommandError, match="No endpoint 'nope' is declared; the endpoints are: ep0"
    ):
        call_command("generate_solutions", f"--campaign={campaign.slug}", "--endpoint=nope")
    with pytest.raises(CommandError, match="no campaign"):
        call_command("generate_solutions", "--campaign=nope", "--resume=1")
    with StubServer(Script(statuses=[500] * 10)) as server:
        with pytest.raises(CommandError, match="failed"):
            call_command(
                "generate_solutions",
                f"--campaign={campaign.slug}",
                f"--endpoint={declare(server.base_url)}",
                "--model=m",
                "-k",
                "1",
                "--max-retries=0",
            )
        server.script.statuses.clear()
        job = GenerationJob.objects.get()
        call_command("generate_solutions", f"--campaign={campaign.slug}", f"--resume={job.pk}")
    job.refresh_from_db()
    assert (job.status, job.solutions_created) == ("done", 1)


# --- real processes ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.mark.slow
@pytest.mark.django_db
def test_a_real_server_answers_a_job_of_fifty_solutions(tiny_model, tmp_path):
    campaign = _campaign(problems=10)
    with TransformersServe(tiny_model, tmp_path / "serve.log") as server:
        job = _job(
            campaign,
            server.base_url,
            model=str(tiny_model),
            samples_per_problem=5,
            concurrency=4,
            max_tokens=24,
            timeout_s=60,
        )
        job = generation_job_run(job=job)
    assert job.status == "done", job.errors
    assert (job.requested, job.completed, job.failed) == (50, 50, 0)
    assert job.solutions_created == 50
    assert job.completion_tokens >= 50 * 4 and job.prompt_tokens > 0
    solutions = Solution.objects.filter(campaign=campaign, source="generation")
    assert solutions.count() == 50
    assert all(s.is_open for s in solutions)  # queued
    for solution in solutions:
        assert solution.steps.count() >= 1  # split
        # graded: random text states no answer, so it is ungraded by rule, not skipped
        assert solution.answer_is_correct is (None if solution.answer is None else False)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_command_killed_half_way_resumes_without_duplicates(tmp_path, settings):
    campaign = _campaign(problems=4)
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "STEPWISE_VAR_DIR": str(settings.VAR_DIR),
        "DJANGO_SETTINGS_MODULE": "stepwise.settings",
    }
    with StubServer(Script(delay_s=0.02)) as server:
        name = declare(server.base_url)
        env["STEPWISE_ENDPOINTS"] = json.dumps(settings.STEPWISE_ENDPOINTS)
        command = [
            sys.executable,
            str(ROOT / "manage.py"),
            "generate_solutions",
            f"--campaign={campaign.slug}",
            f"--endpoint={name}",
            "--model=stub",
            "-k",
            "50",
            "--concurrency=2",
        ]
        log = open(tmp_path / "generate.log", "wb")  # noqa: SIM115 (closed below)
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            wait_until(
                lambda: Solution.objects.filter(campaign=campaign).count() >= 50,
                what="a batch written",
                seconds=120,
                every=0.05,
                processes=[proc],
                log=(tmp_path / "generate.log").read_text,
            )
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=30)
            log.close()
        kept = Solution.objects.filter(campaign=campaign).count()
        assert 50 <= kept < 200
        job = GenerationJob.objects.get()
        assert job.status == "running"  # as the killed worker left it
        # Samples it received but had not imported yet: imported by the resume, not asked again.
        received = ReceivedSample.objects.filter(job=job, written=False).count()
        before = len(server.script.requests)
        call_command(
            "generate_solutions", f"--campaign={campaign.slug}", f"--resume={job.pk}", "--force"
        )
        asked_again = len(server.script.requests) - before
    job.refresh_from_db()
    refs = list(Solution.objects.filter(campaign=campaign).values_list("source_ref", flat=True))
    assert job.status == "done"
    assert len(refs) == len(set(refs)) == 200
    assert asked_again == 200 - kept - received
    # Asked twice: only the requests in flight when it was killed (whose answers it never got).
    assert len(server.script.requests) <= 200 + 2

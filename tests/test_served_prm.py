"""A PRM served elsewhere steers the queue: scoring jobs against a real local ``/pooling`` server
with a real tiny token-classification model (``tests/pooling_server.py``).

A job of 200 solutions completes with the model's own scores; 429 and 500 answers are retried; a
server that keeps failing fails the job with the reason; a killed worker's job resumes without
scoring anything twice; a run ordered by the served scores puts its most convincing wrong answers
first; the item page and the best-of-N curve show it; the key is never stored, logged or echoed.
"""

from __future__ import annotations

import json
import math
import os
import signal

import pytest

from common.job_recovery import job_kind_sweep
from common.jobs import job_run
from labeling.models import Solution
from learning.ordering import Scored, queue_order
from machines.models import ScoringJob, ServedScore
from machines.served import (
    SCORING_JOBS,
    ScoringRefused,
    pooling_text,
    scoring_job_run,
    scoring_job_start,
)
from prm.metrics import solution_score
from tests.factories import make_campaign, make_member, make_solution, make_user
from tests.pooling_server import PoolingServer, Script, TinyPRM
from tests.waiting import log_tail, wait_until

KEY = "sk-served-prm-secret-0123456789"


def _declare(settings, monkeypatch, url: str, *, kind: str = "pooling") -> None:
    monkeypatch.setenv("SERVED_PRM_KEY", KEY)
    settings.STEPWISE_ENDPOINTS = [
        {
            "name": "prm",
            "kind": kind,
            "base_url": url,
            "models": ["Qwen/Qwen2.5-Math-PRM-7B"],
            "key_env": "SERVED_PRM_KEY",
            "timeout_s": 30,
            "max_concurrency": 4,
        }
    ]
    settings.STEPWISE_SCORING_BACKOFF_MS = 0


def _campaign(n: int, **fields):
    campaign = make_campaign(al_scoring_endpoint="prm", **fields)
    for i in range(n):
        make_solution(
            campaign=campaign,
            steps=[f"Let x = {i}.", f"Then x + 1 = {i + 1}.", f"So the answer is {i + 1}."],
            answer_is_correct=i % 3 != 0,
        )
    return campaign


def _no_key_anywhere(caplog) -> None:
    for job in ScoringJob.objects.all():
        assert KEY not in json.dumps(
            {f.name: str(getattr(job, f.attname)) for f in job._meta.fields}
        )
    assert not ServedScore.objects.filter(step_scores__icontains=KEY[:12]).exists()
    assert KEY[:12] not in caplog.text


@pytest.mark.django_db
def test_a_scoring_job_of_200_solutions_stores_the_models_step_and_solution_scores(
    settings, monkeypatch, caplog
):
    settings.STEPWISE_SCORING_BATCH = 64
    settings.STEPWISE_SCORING_REQUEST_SIZE = 16
    with PoolingServer() as server:
        _declare(settings, monkeypatch, server.url)
        campaign = _campaign(200)
        job = scoring_job_run(job=scoring_job_start(campaign=campaign))
    assert job.status == "done", job.error
    assert (job.total, job.scored, job.retries) == (200, 200, 0)
    assert job.requests == 3 * 4 + 1  # batches of 64, 64, 64 and 8, in requests of 16
    rows = ServedScore.objects.filter(campaign=campaign)
    assert rows.count() == 200
    assert set(rows.values_list("endpoint", "model")) == {("prm", "Qwen/Qwen2.5-Math-PRM-7B")}
    model = TinyPRM()  # the same weights as the server's: what it should have answered
    for row in rows.select_related("solution__problem")[:20]:
        steps = list(row.solution.steps.order_by("index").values_list("text", flat=True))
        expected = [p for _, p in model.pairs(pooling_text(row.solution.problem.text, steps))]
        assert row.step_scores == pytest.approx(expected, abs=1e-6)
        assert row.score == pytest.approx(solution_score(expected), rel=1e-5)
    # The key went to the endpoint as a bearer token, and nowhere else.
    assert {h["Authorization"] for h in server.script.headers} == {f"Bearer {KEY}"}
    assert all(body["model"] == "Qwen/Qwen2.5-Math-PRM-7B" for body in server.script.requests)
    assert all("<extra_0>" in text for text in server.script.inputs())
    _no_key_anywhere(caplog)


@pytest.mark.django_db
def test_429_and_500_answers_are_retried_until_the_server_answers(settings, monkeypatch):
    with PoolingServer(Script(statuses=[429, 500, 503])) as server:
        _declare(settings, monkeypatch, server.url)
        campaign = _campaign(10)
        job = scoring_job_run(job=scoring_job_start(campaign=campaign))
    assert job.status == "done", job.error
    assert job.retries == 3
    assert ServedScore.objects.filter(campaign=campaign).count() == 10


@pytest.mark.django_db
def test_a_server_that_keeps_failing_fails_the_job_with_the_reason_and_no_key(
    settings, monkeypatch, caplog
):
    settings.STEPWISE_SCORING_RETRIES = 2
    with PoolingServer(Script(statuses=[500] * 10)) as server:
        _declare(settings, monkeypatch, server.url)
        campaign = _campaign(5)
        job = scoring_job_run(job=scoring_job_start(campaign=campaign))
    assert job.status == "failed"
    assert job.error == "prm answered 500: busy (after 3 tries)"
    assert not ServedScore.objects.exists()
    _no_key_anywhere(caplog)


@pytest.mark.django_db
def test_an_answer_with_the_wrong_number_of_scores_fails_the_job_saying_so(settings, monkeypatch):
    with PoolingServer() as server:
        _declare(settings, monkeypatch, server.url)
        campaign = _campaign(1)
        solution = Solution.objects.get(campaign=campaign)
        solution.steps.filter(index=2).update(text="Two steps <extra_0> in one")
        # the step token inside a step is removed before sending, so the count still matches
        job = scoring_job_run(job=scoring_job_start(campaign=campaign))
        assert job.status == "done", job.error
        server.script.requests.clear()
    with PoolingServer() as server:
        settings.STEPWISE_ENDPOINTS[0]["base_url"] = server.url
        server.model.pairs = lambda text: [[0.5, 0.5]]  # one pair for three steps
        job = scoring_job_run(job=scoring_job_start(campaign=campaign))
    assert job.status == "failed"
    assert "1 scores for 3 steps" in job.error


@pytest.mark.django_db
def test_the_step_scores_protocol_gives_one_score_per_step(settings, monkeypatch):
    with PoolingServer() as server:
        _declare(settings, monkeypatch, server.url, kind="step-scores")
        campaign = _campaign(6)
        job = scoring_job_run(job=scoring_job_start(campaign=campaign))
    assert job.status == "done", job.error
    assert job.requests == 6  # one solution per request
    assert {len(s) for s in ServedScore.objects.values_list("step_scores", flat=True)} == {3}


@pytest.mark.django_db
def test_a_campaign_without_a_scoring_endpoint_or_with_an_undeclared_one_is_refused(settings):
    settings.STEPWISE_ENDPOINTS = []
    with pytest.raises(ScoringRefused, match="Choose a scoring endpoint"):
        scoring_job_start(campaign=make_campaign())
    with pytest.raises(ScoringRefused, match=r"No .* endpoint is declared"):
        scoring_job_start(campaign=make_campaign(al_scoring_endpoint="gone"))


@pytest.mark.celery
def test_answers_back_before_a_kill_are_kept_and_the_counters_cover_every_attempt(
    settings, monkeypatch, celery_workers
):
    """Four requests in flight, the first held: the three others' answers (and the next
    batch's) are committed as they come back, so after a SIGKILL only the held request's texts
    are sent again; the job's counters add up both attempts."""
    script = Script(hold_only=frozenset({1}))
    with PoolingServer(script) as server:
        _declare(settings, monkeypatch, server.url)
        campaign = _campaign(100)
        env = {
            "STEPWISE_ENDPOINTS": json.dumps(settings.STEPWISE_ENDPOINTS),
            "SERVED_PRM_KEY": KEY,
            "STEPWISE_SCORING_BATCH": "64",
            "STEPWISE_SCORING_REQUEST_SIZE": "16",
            "STEPWISE_SCORING_MAX_CONCURRENCY": "4",
        }
        worker = celery_workers(queues="learning", **env)
        job = scoring_job_start(campaign=campaign)
        assert script.held.wait(120), worker.log_path.read_text()[-3000:]
        wait_until(
            lambda: ScoringJob.objects.get(pk=job.pk).scored >= 84,
            what="every answer but the held one committed",
            seconds=60,
            processes=[worker],
            log=log_tail(worker, chars=3000),
        )
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(30)
        first = ScoringJob.objects.get(pk=job.pk)
        sent_before = len(script.inputs())
        script.release.set()
        assert job_kind_sweep(SCORING_JOBS, stale_seconds=0)["requeued"] == 1
        job = job_run(SCORING_JOBS, job.pk)
    assert job.status == "done", job.error
    assert sent_before == 100  # every solution sent once; one request of 16 never answered
    assert len(script.inputs()) - sent_before == 16  # only that request is sent again
    assert (job.scored, job.total, job.attempts) == (100, 100, 2)
    assert first.requests == 7 and job.requests == 8  # both attempts' requests
    assert job.seconds is not None and job.seconds >= (first.seconds or 0)
    assert ServedScore.objects.filter(job=job).count() == 100


@pytest.mark.celery
def test_a_killed_worker_s_job_resumes_without_scoring_anything_twice(
    settings, monkeypatch, celery_workers, tmp_path
):
    script = Script(hold_at=7)  # batches of 20 in requests of 10: 3 batches, then one held
    with PoolingServer(script) as server:
        _declare(settings, monkeypatch, server.url)
        campaign = _campaign(200)
        env = {
            "STEPWISE_ENDPOINTS": json.dumps(settings.STEPWISE_ENDPOINTS),
            "SERVED_PRM_KEY": KEY,
            "STEPWISE_SCORING_BATCH": "20",
            "STEPWISE_SCORING_REQUEST_SIZE": "10",
            "STEPWISE_SCORING_MAX_CONCURRENCY": "1",
        }
        worker = celery_workers(queues="learning", **env)
        job = scoring_job_start(campaign=campaign)
        assert script.held.wait(120), worker.log_path.read_text()[-3000:]
        wait_until(
            lambda: ScoringJob.objects.get(pk=job.pk).scored >= 60,
            what="60 solutions scored",
            seconds=30,
            processes=[worker],
            log=log_tail(worker, chars=3000),
        )
        committed = set(ServedScore.objects.filter(job=job).values_list("solution_id", flat=True))
        assert len(committed) == 60
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(30)
        sent_before = len(script.inputs())
        script.release.set()
        script.hold_at = None

        assert job_kind_sweep(SCORING_JOBS, stale_seconds=0)["requeued"] == 1
        job = job_run(SCORING_JOBS, job.pk)
    assert job.status == "done", job.error
    assert (job.scored, job.total, job.attempts) == (200, 200, 2)
    assert ServedScore.objects.filter(job=job).count() == 200
    texts = script.inputs()
    assert sent_before == 70  # 3 committed batches of 20, and the held request's 10
    resent = texts[sent_before:]
    assert len(resent) == 140  # what was not committed, the held request's 10 again
    solutions = Solution.objects.select_related("problem").filter(pk__in=committed)
    committed_texts = {
        pooling_text(s.problem.text, list(s.steps.order_by("index").values_list("text", flat=True)))
        for s in solutions
    }
    assert not committed_texts & set(resent)
    assert KEY[:12] not in worker.log_path.read_text()


# slow: a whole scoring job and active-learning run, training and evaluating a PRM (about 10 s)
@pytest.mark.slow
@pytest.mark.django_db
def test_a_run_ordered_by_the_served_scores_puts_its_most_convincing_wrong_answers_first(
    settings, monkeypatch, tmp_path
):
    from learning.run import active_learning_run
    from learning.triggers import active_learning_trigger
    from tests.al_data import demo_campaign

    settings.MEDIA_ROOT = tmp_path / "media"
    with PoolingServer() as server:
        _declare(settings, monkeypatch, server.url)
        campaign = demo_campaign(
            al_strategy="served-prm", al_scoring_endpoint="prm", al_control_share=0.2
        )
        job = scoring_job_run(job=scoring_job_start(campaign=campaign))
    assert job.status == "done", job.error
    run = active_learning_run(run=active_learning_trigger(campaign=campaign))
    assert run.status == "succeeded", run.error
    assert run.strategy == "served-prm"
    assert run.model.is_active  # the campaign's own PRM still trained and was evaluated
    assert run.metrics.get("split")
    served = dict(ServedScore.objects.filter(campaign=campaign).values_list("solution_id", "score"))
    open_ = Solution.objects.filter(campaign=campaign, kind="regular", is_open=True)
    queue = list(open_.order_by("-priority", "pk").values_list("pk", "answer_is_correct"))
    # 20% of every prefix is the control arm, drawn uniformly; the rest is the served PRM's order
    arms = dict(open_.values_list("pk", "al_arm"))
    assert abs(sum(1 for pk, _ in queue[:100] if arms[pk] == "control") - 20) <= 1
    expected = queue_order(
        [Scored(pk, served.get(pk, -math.inf), correct) for pk, correct in queue],
        wrong_share=campaign.al_wrong_answer_share,
    )
    queue = [(pk, correct) for pk, correct in queue if arms[pk] == "strategy"]
    assert [pk for pk, _ in queue] == [
        s.solution_id for s in expected if arms[s.solution_id] == "strategy"
    ]
    wrong = [pk for pk, correct in queue if correct is False]
    head_wrong = [pk for pk, correct in queue[:20] if correct is False]
    assert head_wrong == wrong[: len(head_wrong)]
    assert [served[pk] for pk in wrong] == sorted((served[pk] for pk in wrong), reverse=True)
    # The best-of-N curve has the served PRM as one more method.
    accuracy = run.best_of_n.get("accuracy", {})
    assert "served PRM (product)" in accuracy, run.best_of_n
    assert len(accuracy["served PRM (product)"]) == len(run.best_of_n["n"])


@pytest.mark.django_db
def test_the_item_page_shows_the_served_prms_step_scores(client, settings, monkeypatch):
    with PoolingServer() as server:
        _declare(settings, monkeypatch, server.url)
        campaign = _campaign(2)
        scoring_job_run(job=scoring_job_start(campaign=campaign))
    manager = make_user()
    make_member(campaign=campaign, user=manager, role="manager")
    client.force_login(manager)
    row = ServedScore.objects.filter(campaign=campaign).first()
    page = client.get(f"/campaigns/{campaign.slug}/browse/{row.solution_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "served PRM" in html
    assert f"{row.step_scores[0]:.3f}" in html

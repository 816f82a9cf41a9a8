"""Work accepted while the broker is down: a real web process whose Redis is not there answers
202 with the job's id (not 500), and once a broker is back the sweep (on beat, in a real worker)
delivers the job, which runs exactly once (``common.jobs.JobKind.send``, ``job_unsent``); a
retry with the same ``Idempotency-Key`` gets the same job.

Needs ``redis-server`` (the test starts its own, on a port that was closed when the work was
posted); runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from exports.models import Export
from imports.models import ImportJob
from labeling.models import Membership, Solution
from tests.conftest import FIXTURES, free_port
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_token
from tests.waiting import log_tail, wait_until

pytestmark = [
    pytest.mark.celery,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]

DEADLINE_S = 120  # a failure bound, not a performance assertion
GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"
FAST = {
    "STEPWISE_JOB_HEARTBEAT_SECONDS": "1",
    "STEPWISE_JOB_STALE_SECONDS": "3",
    "STEPWISE_JOB_SWEEP_SECONDS": "1",
}


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


@pytest.fixture
def redis_port(tmp_path):
    """A port with no broker yet; ``start()`` brings a Redis up on it (stopped at the end)."""
    port = free_port()
    started: list[subprocess.Popen] = []

    def start() -> None:
        proc = subprocess.Popen(
            [
                *("redis-server", "--port", str(port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(tmp_path)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(proc)
        ping = ["redis-cli", "-p", str(port), "ping"]
        wait_until(
            lambda: subprocess.run(ping, capture_output=True, text=True).stdout.strip() == "PONG",
            what="redis-server to start",
            seconds=30,
            processes=[proc],
        )

    yield port, start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=30)


def _finished(job):
    job.refresh_from_db()
    return job.status in ("done", "failed")


def test_work_posted_while_the_broker_is_down_gets_its_id_and_runs_once_when_it_is_back(
    media, settings, redis_port, web_processes, celery_workers
):
    import httpx

    port, start_redis = redis_port
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"  # what the processes are given
    campaign = make_campaign(slug="broker-down")
    for ratings in ([1, 1, -1], [1, 0]):
        make_labelled(solution=make_solution(campaign=campaign), ratings=ratings)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    web = web_processes()
    api = httpx.Client(
        base_url=web, headers={"Authorization": f"Token {make_token(user=manager)}"}, timeout=60
    )
    base = f"/api/campaigns/{campaign.slug}"

    keyed = {"Idempotency-Key": "nightly-export-1"}
    exported = api.post(f"{base}/exports/", json={"format": "trl"}, headers=keyed)
    retried = api.post(f"{base}/exports/", json={"format": "trl"}, headers=keyed)  # a retry
    with open(GSM8K, "rb") as fh:
        uploaded = api.post(
            f"{base}/imports/",
            data={"format": "jsonl", "grade": "false"},
            files={"file": ("gsm8k.jsonl", fh)},
        )

    assert exported.status_code == retried.status_code == 202, exported.text
    assert retried.json()["id"] == exported.json()["id"]
    assert Export.objects.filter(campaign=campaign).count() == 1  # the retry created nothing
    assert uploaded.status_code == 202, uploaded.text
    export = Export.objects.get(pk=exported.json()["id"], campaign=campaign)
    job = ImportJob.objects.get(pk=uploaded.json()["id"], campaign=campaign)
    assert (export.status, job.status) == ("pending", "pending")
    web_log = next(media.parent.glob("gunicorn-*.log")).read_text(errors="replace")
    assert web_log.count("the broker did not take its message") == 2
    assert api.get(f"{base}/exports/{export.pk}/").json()["status"] == "pending"

    # The broker comes back; a worker with beat runs the sweep, which sends both jobs.
    start_redis()
    worker = celery_workers(beat=True, **FAST)
    wait_until(
        lambda: _finished(export) and _finished(job),
        what="the sweep to send both jobs and a worker to run them",
        seconds=DEADLINE_S,
        every=0.2,
        processes=[worker],
        log=log_tail(worker),
    )

    assert export.status == "done", export.error
    assert job.status == "done", job.errors
    assert (export.attempts, job.attempts) == (1, 1)  # each ran once
    (entry,) = export.files
    assert entry["records"] == 2
    created = job.counts["solutions_created"]
    assert created > 0
    assert Solution.objects.filter(campaign=campaign).count() == 2 + created

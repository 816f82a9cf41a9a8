"""Queues that cannot starve, with real workers: generation runs on its own queue (``long``), so
an import is not behind it, and a job waiting on a queue that no worker consumes says so on its
status partial (common/queues.py asks the workers which queues they consume)."""

from __future__ import annotations

import json
import os
import signal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from common.queues import queue_consumers
from exports.services import export_create
from imports.services import import_job_create
from labeling.models import Membership
from machines.generation import generation_job_create
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_labelled, make_member, make_problem, make_solution
from tests.generation_servers import StubServer
from tests.waiting import log_tail, wait_until

pytestmark = [pytest.mark.celery, pytest.mark.slow]

DEADLINE_S = 120  # a failure bound, not a performance assertion
GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


def _wait(predicate, *, procs, what: str):
    return wait_until(
        predicate, what=what, seconds=DEADLINE_S, processes=procs, log=log_tail(*procs, chars=3000)
    )


def _log(proc) -> str:
    return proc.log_path.read_text(errors="replace")


def _ready(proc) -> bool:
    return " ready." in _log(proc)


def test_an_import_is_not_behind_a_running_generation(media, celery_workers, settings):
    campaign = make_campaign(slug="not-starved")
    make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    with StubServer() as server:
        settings.STEPWISE_ENDPOINTS = [
            {"name": "stub", "kind": "chat", "base_url": server.base_url, "models": ["stub"]}
        ]
        declared = {"STEPWISE_ENDPOINTS": json.dumps(settings.STEPWISE_ENDPOINTS)}
        # The generation holds its worker after its first batch, as a long vLLM job would.
        long = celery_workers(
            queues="long", STEPWISE_JOB_PAUSE='{"generation.written": 600}', **declared
        )
        default = celery_workers(queues="celery", **declared)
        generation = generation_job_create(  # autocommit: sent at once
            campaign=campaign,
            created_by=None,
            endpoint="stub",
            samples_per_problem=30,
            concurrency=2,
            grade=False,
        )
        _wait(
            lambda: "job stage generation.written: pausing" in _log(long),
            procs=[long, default],
            what="the generation's first batch",
        )
        upload = SimpleUploadedFile("gsm8k.jsonl", GSM8K.read_bytes())
        job = import_job_create(
            campaign=campaign, created_by=None, upload=upload, fmt="jsonl", grade=False
        )

        def imported():
            job.refresh_from_db()
            return job.status in ("done", "failed")

        _wait(imported, procs=[long, default], what="the import")
        generation.refresh_from_db()
        # Killed, not stopped: a warm shutdown would wait for the paused generation.
        os.kill(long.pid, signal.SIGKILL)
        long.wait(timeout=30)

    assert job.status == "done", job.errors
    assert job.counts["solutions_created"] > 0
    assert generation.status == "running"  # still holding its worker when the import ended
    assert "Task imports.generation_run[" in _log(long)
    assert "Task imports.generation_run[" not in _log(default)
    assert "Task imports.import_run[" in _log(default)


def test_a_job_on_a_queue_no_worker_consumes_says_so_on_its_page(
    media, celery_workers, client, settings
):
    campaign = make_campaign(slug="unconsumed")
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, -1])
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    worker = celery_workers(queues="celery")  # a CPU-only site: nobody takes `learning`
    _wait(lambda: _ready(worker), procs=[worker], what="the worker")
    export = export_create(campaign=campaign, fmt="trl")  # goes to `learning`

    consumers = queue_consumers(refresh=True)
    assert consumers.of("celery") and consumers.unconsumed("learning")
    url = reverse(
        "labeling:job-status", kwargs={"slug": campaign.slug, "kind": "exports", "pk": export.pk}
    )
    html = client.get(f"{url}?state=pending", **HX).content.decode()
    assert "waiting for a worker" in html
    assert "No worker consumes the queue “learning”" in html
    assert "celery -A stepwise worker -Q learning" in html

    # A worker of that queue starts: the job runs, and the page no longer says it.
    heavy = celery_workers(queues="learning")

    def exported():
        export.refresh_from_db()
        return export.status in ("done", "failed")

    _wait(exported, procs=[worker, heavy], what="the export")
    assert export.status == "done", export.error
    assert not queue_consumers(refresh=True).unconsumed("learning")
    html = client.get(f"{url}?state=pending", **HX).content.decode()
    assert "No worker consumes" not in html

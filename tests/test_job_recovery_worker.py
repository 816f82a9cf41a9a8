"""Jobs survive their worker: a real worker process is SIGKILLed in the middle of an export and
of an upload import, and the sweep (on beat, in another worker) gets the job done, or failed
with a reason once its attempts are spent. Redis in CI, the filesystem broker here.

``STEPWISE_JOB_PAUSE`` holds the doomed worker at a known point of the job (after the export's
files are written under their temporary name; inside the import's transaction, after its last
write), and its log line says it got there.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from exports.services import export_create
from imports.models import ImportJob
from imports.services import import_job_create
from labeling.models import Solution
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_labelled, make_solution

pytestmark = [pytest.mark.celery, pytest.mark.slow]

DEADLINE_S = 180  # a failure bound, not a performance assertion
GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"
# Beats every second, silent after three, swept every second: short, for the test.
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


def _wait(predicate, *, proc, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    log = proc.log_path.read_text(errors="replace")[-5000:]
    pytest.fail(f"timed out waiting for {what}\n{log}")


def _paused_at(proc, stage: str):
    return lambda: f"job stage {stage}: pausing" in proc.log_path.read_text(errors="replace")


def _kill(proc) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _finished(job):
    job.refresh_from_db()
    return job if job.status in ("done", "failed") else None


def _upload(campaign) -> ImportJob:
    upload = SimpleUploadedFile("gsm8k.jsonl", GSM8K.read_bytes())
    return import_job_create(
        campaign=campaign, created_by=None, upload=upload, fmt="jsonl", grade=False
    )


def test_a_worker_killed_mid_export_leaves_no_files_and_the_sweep_gets_it_done(
    media, celery_workers
):
    campaign = make_campaign(slug="killed-export")
    for ratings in ([1, 1, -1], [1, 0], [-1]):
        make_labelled(solution=make_solution(campaign=campaign), ratings=ratings)
    doomed = celery_workers(STEPWISE_JOB_PAUSE='{"exports.write": 600}', **FAST)
    export = export_create(campaign=campaign, fmt="trl")  # autocommit: sent at once

    _wait(_paused_at(doomed, "exports.write"), proc=doomed, what="the export's files")
    _kill(doomed)

    export.refresh_from_db()
    assert (export.status, export.attempts, export.files) == ("running", 1, [])
    assert not (media / "exports" / str(export.pk)).exists()  # written, never published

    rescuer = celery_workers(beat=True, **FAST)
    export = _wait(lambda: _finished(export), proc=rescuer, what="the recovered export")
    assert export.status == "done", export.error
    assert export.attempts == 2
    (entry,) = export.files
    content = (export.directory / entry["name"]).read_bytes()
    assert hashlib.sha256(content).hexdigest() == entry["sha256"]
    rows = [json.loads(line) for line in content.decode().splitlines()]
    assert [r["labels"] for r in rows] == [[True, True, False], [True, True], [False]]
    assert list((media / "exports" / ".partial").iterdir()) == []  # the dead attempt's, removed


def test_a_worker_killed_mid_import_writes_nothing_and_the_sweep_imports_it_once(
    media, celery_workers
):
    campaign = make_campaign(slug="killed-import")
    doomed = celery_workers(STEPWISE_JOB_PAUSE='{"imports.write": 600}', **FAST)
    job = _upload(campaign)

    _wait(_paused_at(doomed, "imports.write"), proc=doomed, what="the import's last write")
    _kill(doomed)

    job.refresh_from_db()
    assert (job.status, job.attempts, job.counts) == ("running", 1, {})
    assert not Solution.objects.filter(campaign=campaign).exists()  # rolled back with the worker

    rescuer = celery_workers(beat=True, **FAST)
    job = _wait(lambda: _finished(job), proc=rescuer, what="the recovered import")
    assert job.status == "done", (job.error, job.errors)
    assert job.attempts == 2
    created = job.counts["solutions_created"]
    assert created > 0
    assert Solution.objects.filter(campaign=campaign).count() == created  # written once
    assert not job.path.exists()  # the upload is removed once the job is done


def test_a_killed_import_out_of_attempts_fails_with_the_reason_on_its_page(
    media, celery_workers, client
):
    from django.urls import reverse

    from tests.factories import make_member

    campaign = make_campaign(slug="spent-import")
    doomed = celery_workers(STEPWISE_JOB_PAUSE='{"imports.write": 600}', **FAST)
    job = _upload(campaign)
    _wait(_paused_at(doomed, "imports.write"), proc=doomed, what="the import's last write")
    _kill(doomed)

    sweeper = celery_workers(beat=True, STEPWISE_JOB_MAX_ATTEMPTS="1", **FAST)
    job = _wait(lambda: _finished(job), proc=sweeper, what="the sweep to give up")
    assert job.status == "failed" and job.attempts == 1
    assert "gave up after 1 attempts" in job.error
    assert job.errors[0]["message"] == job.error
    assert not Solution.objects.filter(campaign=campaign).exists()

    client.force_login(make_member(campaign=campaign, role="manager").user)
    page = client.get(reverse("imports:list", kwargs={"slug": campaign.slug})).content.decode()
    assert "gave up after 1 attempts" in page

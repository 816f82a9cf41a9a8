"""Jobs survive their worker: a real worker process is SIGKILLed in the middle of each of the seven
kinds of job (an upload import, a generation, an export, the dashboard's figures, an
active-learning run, a bulk action, machine evidence), and the sweep (on beat, in another
worker) gets the job done once, or failed with a reason once its attempts are spent; nobody
presses anything. A job of the `learning` queue is sent again to that queue: only a worker of
that queue runs it. Redis and PostgreSQL in CI, the filesystem broker and SQLite here.

``STEPWISE_JOB_PAUSE`` holds the doomed worker at a known point of the job (after the export's
files are written under their temporary name; inside the import's transaction, after its last
write; after a generation's first batch; after the figures are counted; as training starts;
inside a bulk action's transaction, after its changes; after an evidence job's first unit), and
its log line says it got there.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotators.models import CampaignSnapshot
from annotators.snapshots import snapshot_request
from exports.services import export_create
from imports.models import ImportJob
from imports.services import import_job_create
from labeling.curation import actions
from labeling.curation.filters import SolutionFilter
from labeling.models import Solution, SolutionBulkAction, SolutionEvent
from learning.models import ActiveLearningRun, PRMModel
from learning.triggers import active_learning_trigger
from machines.generation import generation_job_create
from tests.al_data import demo_campaign
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_labelled, make_problem, make_solution
from tests.generation_servers import StubServer
from tests.waiting import log_tail, wait_until

pytestmark = [pytest.mark.celery, pytest.mark.slow]

DEADLINE_S = 240  # a failure bound, not a performance assertion
GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"
# Beats every second, silent after three, swept every second: short, for the test.
FAST = {
    "STEPWISE_JOB_HEARTBEAT_SECONDS": "1",
    "STEPWISE_JOB_STALE_SECONDS": "3",
    "STEPWISE_JOB_SWEEP_SECONDS": "1",
    "STEPWISE_AL_HEARTBEAT_SECONDS": "1",
    "STEPWISE_AL_STALE_SECONDS": "3",
}


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


def _wait(predicate, *, proc, what: str):
    return wait_until(
        predicate, what=what, seconds=DEADLINE_S, every=0.1, processes=[proc], log=log_tail(proc)
    )


def _paused_at(proc, stage: str):
    return lambda: f"job stage {stage}: pausing" in proc.log_path.read_text(errors="replace")


def _kill(proc) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _finished(job):
    job.refresh_from_db()
    return job if job.status in ("done", "succeeded", "failed") else None


def _ran(proc, task: str) -> bool:
    """Whether this worker process took a message of ``task``."""
    return f"Task {task}[" in proc.log_path.read_text(errors="replace")


def _rescuers(celery_workers, queue: str):
    """Beat (the sweep) on a worker of the default queue only, and for a job of another queue a
    worker of that queue only: the job is done where its queue's worker is."""
    sweeper = celery_workers(queues="celery", beat=True, **FAST)
    if queue == "celery":
        return sweeper, sweeper
    return sweeper, celery_workers(queues=queue, **FAST)


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

    sweeper, rescuer = _rescuers(celery_workers, "learning")
    export = _wait(lambda: _finished(export), proc=rescuer, what="the recovered export")
    assert export.status == "done", export.error
    assert export.attempts == 2
    assert _ran(rescuer, "exports.export_run") and not _ran(sweeper, "exports.export_run")
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


def test_a_worker_killed_mid_generation_keeps_its_batch_and_the_sweep_asks_only_for_the_rest(
    celery_workers, settings
):
    campaign = make_campaign(slug="killed-generation")
    for i in range(2):
        make_problem(
            campaign=campaign, text=f"Problem {i}: what is $1+1$?", ground_truth_answer="2"
        )
    with StubServer() as server:
        # The operator declares the endpoint, for this process and the workers alike.
        settings.STEPWISE_ENDPOINTS = [
            {"name": "stub", "kind": "chat", "base_url": server.base_url, "models": ["stub"]}
        ]
        declared = {"STEPWISE_ENDPOINTS": json.dumps(settings.STEPWISE_ENDPOINTS)}
        doomed = celery_workers(
            STEPWISE_JOB_PAUSE='{"generation.written": 600}', **FAST, **declared
        )
        job = generation_job_create(  # autocommit: sent at once
            campaign=campaign,
            created_by=None,
            endpoint="stub",
            samples_per_problem=30,
            concurrency=2,
            grade=False,
        )
        _wait(_paused_at(doomed, "generation.written"), proc=doomed, what="the first batch")
        _kill(doomed)

        job.refresh_from_db()
        kept = Solution.objects.filter(campaign=campaign).count()
        assert (job.status, job.attempts, job.completed, kept) == ("running", 1, 25, 25)
        asked_before = len(server.script.requests)

        rescuer = celery_workers(beat=True, **FAST, **declared)  # nobody presses Resume
        job = _wait(lambda: _finished(job), proc=rescuer, what="the resumed generation")
        asked_again = len(server.script.requests) - asked_before

    assert job.status == "done", job.errors
    assert (job.attempts, job.requested, job.completed, job.solutions_created) == (2, 60, 60, 60)
    refs = list(Solution.objects.filter(campaign=campaign).values_list("source_ref", flat=True))
    assert len(refs) == len(set(refs)) == 60  # no sample twice
    assert asked_again == 60 - kept  # only the samples without a solution


def test_a_worker_killed_mid_evidence_keeps_its_units_and_the_sweep_asks_only_for_the_rest(
    celery_workers, settings
):
    from labeling.models import StepEvidence
    from machines.evidence import evidence_job_create
    from machines.models import EvidenceJob

    campaign = make_campaign(slug="killed-evidence")
    problem = make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    steps = [f"Step {i}: $1+1$." for i in range(20)] + ["# Answer\n\n2"]
    solution = make_solution(campaign=campaign, problem=problem, steps=steps)
    with StubServer() as server:
        settings.STEPWISE_ENDPOINTS = [
            {"name": "stub", "kind": "chat", "base_url": server.base_url, "models": ["stub"]}
        ]
        declared = {"STEPWISE_ENDPOINTS": json.dumps(settings.STEPWISE_ENDPOINTS)}
        doomed = celery_workers(STEPWISE_JOB_PAUSE='{"evidence.written": 600}', **FAST, **declared)
        job = evidence_job_create(  # autocommit: sent at once
            campaign=campaign,
            created_by=None,
            kind="rollouts",
            endpoint="stub",
            selection={"id": [solution.pk]},
            samples_per_step=3,
            concurrency=1,
        )
        _wait(_paused_at(doomed, "evidence.written"), proc=doomed, what="the first unit")
        _kill(doomed)

        job.refresh_from_db()
        kept = StepEvidence.objects.filter(solution=solution).count()
        assert (job.status, job.attempts, job.completed, kept) == ("running", 1, 1, 1)
        asked_before = len(server.script.requests)

        rescuer = celery_workers(beat=True, **FAST, **declared)  # nobody presses Resume
        job = _wait(lambda: _finished(job), proc=rescuer, what="the resumed evidence job")
        asked_again = len(server.script.requests) - asked_before

    job = EvidenceJob.objects.get(pk=job.pk)
    assert job.status == "done", job.errors
    assert (job.attempts, job.requested, job.completed, job.samples) == (2, 20, 20, 60)
    assert StepEvidence.objects.filter(solution=solution).count() == 20  # one per step
    # Only the units without evidence are asked for again: no sample twice.
    assert asked_again == (20 - kept) * 3


def test_a_worker_killed_mid_figures_stores_nothing_and_the_sweep_computes_them_once(
    celery_workers,
):
    campaign = make_campaign(slug="killed-figures")
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, -1])
    doomed = celery_workers(STEPWISE_JOB_PAUSE='{"snapshots.store": 600}', **FAST)
    snapshot = snapshot_request(campaign=campaign)  # autocommit: sent at once

    _wait(_paused_at(doomed, "snapshots.store"), proc=doomed, what="the counted figures")
    _kill(doomed)

    snapshot.refresh_from_db()
    assert (snapshot.status, snapshot.attempts, snapshot.data) == ("running", 1, {})

    rescuer = celery_workers(beat=True, **FAST)
    snapshot = _wait(lambda: _finished(snapshot), proc=rescuer, what="the recovered figures")
    assert snapshot.status == "done", snapshot.error
    assert snapshot.attempts == 2 and snapshot.computed_at is not None
    assert snapshot.data["totals"]["assignments"] == 1
    assert CampaignSnapshot.objects.filter(campaign=campaign).count() == 1  # computed once


def test_a_worker_killed_mid_run_leaves_no_model_and_the_sweep_trains_it_once_on_its_queue(
    media, celery_workers
):
    campaign = demo_campaign(active_learning=True)
    doomed = celery_workers(STEPWISE_JOB_PAUSE='{"active_learning.train": 600}', **FAST)
    run = active_learning_trigger(campaign=campaign)  # autocommit: sent at once

    _wait(_paused_at(doomed, "active_learning.train"), proc=doomed, what="training to start")
    _kill(doomed)

    run.refresh_from_db()
    assert (run.status, run.attempts, run.timings.get("stage")) == ("running", 1, "train")
    assert not PRMModel.objects.filter(campaign=campaign).exists()
    assert active_learning_trigger(campaign=campaign).pk == run.pk  # the lock holds meanwhile

    sweeper, rescuer = _rescuers(celery_workers, "learning")
    run = _wait(lambda: _finished(run), proc=rescuer, what="the recovered run")
    assert run.status == "succeeded", run.error
    assert run.attempts == 2
    (model,) = PRMModel.objects.filter(campaign=campaign)  # trained and registered once
    assert model.is_active and run.model_id == model.pk and model.path.endswith("/attempt-2")
    ran = "learning.active_learning_run"
    assert _ran(rescuer, ran) and not _ran(sweeper, ran)
    assert ActiveLearningRun.objects.filter(campaign=campaign).count() == 1


def test_a_worker_killed_mid_bulk_action_changes_nothing_and_the_sweep_applies_it_once(
    celery_workers, monkeypatch
):
    monkeypatch.setattr(actions, "INLINE_MAX", 2)  # a job for a worker, not the request
    campaign = make_campaign(slug="killed-bulk")
    for _ in range(5):
        make_solution(campaign=campaign, answer_is_correct=False)
    keep = make_solution(campaign=campaign, answer_is_correct=True)
    doomed = celery_workers(STEPWISE_JOB_PAUSE='{"bulk_actions.apply": 600}', **FAST)
    job = actions.bulk_action_create(  # autocommit: sent at once
        campaign=campaign,
        action="archive",
        solution_filter=SolutionFilter.from_params({"answer": "wrong"}),
    )
    assert (job.status, job.total) == ("pending", 5)

    _wait(_paused_at(doomed, "bulk_actions.apply"), proc=doomed, what="the applied action")
    _kill(doomed)

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("running", 1)
    assert not Solution.objects.filter(archived=True).exists()  # rolled back with the worker
    assert not SolutionEvent.objects.exists()

    rescuer = celery_workers(beat=True, **FAST)
    job = _wait(lambda: _finished(job), proc=rescuer, what="the recovered bulk action")
    assert job.status == "done", job.error
    assert (job.attempts, job.changed, job.progress) == (2, 5, 1.0)
    assert Solution.objects.filter(archived=True).count() == 5
    assert not Solution.objects.get(pk=keep.pk).archived
    assert SolutionEvent.objects.count() == 5  # each solution's history says it once
    assert SolutionBulkAction.objects.count() == 1

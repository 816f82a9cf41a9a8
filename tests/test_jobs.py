"""Jobs (common/jobs.py): the registry, the tasks, the claim, the owner-only writes and the
sweep, in process.

The real thing, with worker processes killed mid-job, is in test_job_recovery_worker.py; the
status partial and view every page polls are in test_job_status.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotators.models import CampaignSnapshot
from common.job_recovery import job_is_silent, job_kind_sweep, jobs_sweep
from common.jobs import JobAttempt, JobSuperseded, job_claim, job_kinds, job_task
from exports.models import Export
from exports.services import EXPORT_JOBS, export_run
from imports.models import ImportJob
from imports.services import IMPORT_JOBS, import_job_create, import_job_run
from labeling.models import Solution, SolutionBulkAction
from learning.models import ActiveLearningRun
from machines.models import EvidenceJob, GenerationJob, Phase1Sampling, ScoringJob
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_labelled, make_solution

pytestmark = pytest.mark.django_db

GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


def _export(**fields) -> Export:
    campaign = make_campaign()
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, -1])
    return Export.objects.create(campaign=campaign, format="trl", **fields)


# Each kind of background work, the model of its rows and the queue its task goes to.
KINDS = {
    "imports": (ImportJob, "celery"),
    "generation": (GenerationJob, "long"),
    "exports": (Export, "learning"),
    "snapshots": (CampaignSnapshot, "celery"),
    "active_learning": (ActiveLearningRun, "learning"),
    "bulk_actions": (SolutionBulkAction, "celery"),
    "evidence": (EvidenceJob, "long"),
    "scoring": (ScoringJob, "learning"),
    "phase1-sampling": (Phase1Sampling, "celery"),
}


def _row(kind: str, **fields):
    """A row of each kind of job, in a campaign of its own (a run locks its campaign)."""
    campaign = make_campaign()
    own: dict[str, object] = {}
    own |= {
        "imports": {"file_name": "x.jsonl", "format": "jsonl"},
        "generation": {"base_url": "http://localhost:8000/v1", "model": "m"},
        "exports": {"format": "trl"},
        "bulk_actions": {"action": "requeue"},
        "evidence": {"kind": "judge", "endpoint": "e", "model": "m"},
        "scoring": {"endpoint": "e", "model": "m"},
        "phase1-sampling": {"prefix_hash": "h"},
    }.get(kind, {})
    if kind == "phase1-sampling":
        own["solution"] = make_solution(campaign=campaign)
    return KINDS[kind][0].objects.create(campaign=campaign, **own, **fields)


def test_every_kind_of_background_work_is_a_registered_job_kind():
    assert {name: kind.model for name, kind in job_kinds().items()} == {
        name: model for name, (model, _) in KINDS.items()
    }


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kind_has_a_late_acknowledged_task_on_its_queue(name):
    from stepwise.celery import app

    task = job_task(job_kinds()[name])
    assert task.acks_late and task.reject_on_worker_lost
    assert app.amqp.router.route({}, task.name)["queue"].name == KINDS[name][1]


def test_the_sweep_runs_on_beat_on_the_default_queue_more_often_than_a_job_goes_stale(settings):
    from stepwise.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["common-jobs-sweep"]
    assert entry == {"task": "common.jobs_sweep", "schedule": settings.STEPWISE_JOB_SWEEP_SECONDS}
    app.loader.import_default_modules()  # as a worker does at start: every app's tasks module
    assert "common.jobs_sweep" in app.tasks
    assert app.amqp.router.route({}, "common.jobs_sweep")["queue"].name == "celery"
    for kind in job_kinds().values():  # a dead job is sent again within stale + sweep seconds
        assert kind.stale_seconds > settings.STEPWISE_JOB_SWEEP_SECONDS


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_sweep_sends_back_each_kind_of_silent_job_and_fails_it_with_its_reason(
    name, settings, django_capture_on_commit_callbacks
):
    kind = job_kinds()[name]
    old = timezone.now() - timedelta(minutes=10)
    running, failed = kind.status("running"), kind.status("failed")
    silent = _row(name, status=running, attempts=1, heartbeat_at=old)
    spent = _row(name, status=running, attempts=kind.max_attempts, heartbeat_at=old)

    with django_capture_on_commit_callbacks() as sent:
        assert job_kind_sweep(kind) == {"requeued": 1, "resent": 0, "failed": 1}
    assert len(sent) == 1
    silent.refresh_from_db()
    spent.refresh_from_db()
    assert (kind.state(silent), silent.attempts) == ("pending", 1)
    assert spent.status == failed
    assert f"gave up after {kind.max_attempts} attempts" in spent.error


def test_a_job_is_claimed_once_and_counts_its_attempt():
    export = _export()
    assert job_claim(EXPORT_JOBS, export.pk) == 1
    assert job_claim(EXPORT_JOBS, export.pk) is None  # a second message for the same job
    export.refresh_from_db()
    assert (export.status, export.attempts) == ("running", 1)
    assert export.heartbeat_at is not None and export.started_at is not None


def test_only_the_attempt_that_owns_a_job_writes_to_it():
    export = _export()
    attempt = JobAttempt(EXPORT_JOBS, export.pk, job_claim(EXPORT_JOBS, export.pk))
    attempt.update(progress=0.5)
    with pytest.raises(JobSuperseded):
        JobAttempt(EXPORT_JOBS, export.pk, attempt.number + 1).update(progress=0.9)
    export.refresh_from_db()
    assert export.progress == 0.5


def test_a_waiting_job_out_of_attempts_is_failed_not_sent_for_ever(
    settings, django_capture_on_commit_callbacks
):
    settings.STEPWISE_JOB_MAX_ATTEMPTS = 2
    old = timezone.now() - timedelta(minutes=10)
    lost = _export(attempts=2, heartbeat_at=old)  # resumed by hand after its last attempt

    with django_capture_on_commit_callbacks() as sent:
        assert jobs_sweep()["exports"] == {"requeued": 0, "resent": 0, "failed": 1}
    assert sent == []
    lost.refresh_from_db()
    assert lost.status == "failed" and "gave up after 2 attempts" in lost.error


def test_a_job_is_silent_by_the_sweeps_rule(settings):
    old = timezone.now() - timedelta(seconds=settings.STEPWISE_JOB_STALE_SECONDS + 5)
    assert job_is_silent(EXPORT_JOBS, _export(status="running", heartbeat_at=old))
    assert job_is_silent(EXPORT_JOBS, _export(status="running", started_at=old))
    assert not job_is_silent(EXPORT_JOBS, _export(status="running", heartbeat_at=timezone.now()))


def test_the_sweep_sends_back_silent_jobs_resends_lost_ones_and_fails_spent_ones(
    settings, django_capture_on_commit_callbacks
):
    settings.STEPWISE_JOB_MAX_ATTEMPTS = 2
    old = timezone.now() - timedelta(minutes=10)
    silent = _export(status="running", attempts=1, heartbeat_at=old)
    alive = _export(status="running", attempts=1, heartbeat_at=timezone.now())
    lost = _export(created_at=old)
    fresh = _export()
    stuck = _export(status="running", started_at=old)  # running from before heartbeats
    campaign = make_campaign()
    spent = CampaignSnapshot.objects.create(
        campaign=campaign, status="running", attempts=2, heartbeat_at=old
    )

    with django_capture_on_commit_callbacks() as sent:
        out = jobs_sweep()
    assert out["exports"] == {"requeued": 2, "resent": 1, "failed": 0}
    assert out["snapshots"] == {"requeued": 0, "resent": 0, "failed": 1}
    assert len(sent) == 3
    for job in (silent, alive, lost, fresh, stuck, spent):
        job.refresh_from_db()
    assert silent.status == "pending" and silent.heartbeat_at > old
    assert stuck.status == "pending"
    assert alive.status == "running"
    assert lost.status == "pending" and lost.heartbeat_at is not None
    assert fresh.status == "pending" and fresh.heartbeat_at is None
    assert spent.status == "failed" and "gave up after 2 attempts" in spent.error

    with django_capture_on_commit_callbacks() as sent:
        out = jobs_sweep()
    assert sent == [] and out["exports"] == {"requeued": 0, "resent": 0, "failed": 0}


def test_an_import_the_sweep_gives_up_on_shows_why_among_its_errors(settings):
    settings.STEPWISE_JOB_MAX_ATTEMPTS = 1
    old = timezone.now() - timedelta(minutes=10)
    job = ImportJob.objects.create(
        campaign=make_campaign(),
        file_name="big.jsonl",
        format="jsonl",
        status="running",
        attempts=1,
        heartbeat_at=old,
    )
    assert jobs_sweep()["imports"]["failed"] == 1
    job.refresh_from_db()
    assert job.status == "failed" and job.finished_at is not None
    assert (
        job.errors == [{"file": "big.jsonl", "line": None, "field": "", "message": job.error}]
        and "gave up after 1 attempts" in job.error
    )


def _upload(campaign) -> ImportJob:
    upload = SimpleUploadedFile("gsm8k.jsonl", GSM8K.read_bytes())
    return import_job_create(
        campaign=campaign, created_by=None, upload=upload, fmt="jsonl", grade=False
    )


def _take_over(kind, pk):
    """What the sweep and a second worker do to a job whose worker seemed dead."""

    def pause(stage: str) -> None:
        kind.model.objects.filter(pk=pk).update(attempts=2)

    return pause


def test_an_import_that_lost_its_job_to_another_attempt_writes_nothing(monkeypatch):
    campaign = make_campaign()
    job = _upload(campaign)
    monkeypatch.setattr("imports.services.stage_pause", _take_over(IMPORT_JOBS, job.pk))

    job = import_job_run(job=job)

    # (The take-over here is rolled back with the import: in life it is another connection's.)
    assert job.status == "running" and job.counts == {}
    assert not Solution.objects.filter(campaign=campaign).exists()  # rolled back whole
    assert job.path.exists()  # the upload stays for the attempt that owns the job


def test_an_import_whose_worker_died_after_its_commit_is_only_finished():
    campaign = make_campaign()
    job = _upload(campaign)
    ImportJob.objects.filter(pk=job.pk).update(counts={"solutions_created": 7})

    job = import_job_run(job=job)

    assert job.status == "done" and job.counts == {"solutions_created": 7}
    assert not Solution.objects.filter(campaign=campaign).exists()  # not imported twice


def test_a_finished_import_whose_worker_died_while_grading_is_graded_by_the_next_attempt():
    from imports.pipeline import import_file

    campaign = make_campaign()
    job = _upload(campaign)
    written = import_file(job.path, campaign=campaign, fmt="jsonl", grade=False)
    ImportJob.objects.filter(pk=job.pk).update(
        grade=True, counts={"solutions_created": written.solutions_created}
    )
    assert not Solution.objects.filter(campaign=campaign, answer_is_correct__isnull=False).exists()

    job = import_job_run(job=job)

    graded = Solution.objects.filter(campaign=campaign, answer_is_correct__isnull=False).count()
    assert job.status == "done" and graded > 0
    assert job.counts == {
        "solutions_created": written.solutions_created,
        "solutions_graded": graded,
    }


def test_an_export_that_lost_its_job_to_another_attempt_publishes_nothing(monkeypatch, media):
    export = _export()
    monkeypatch.setattr("exports.services.stage_pause", _take_over(EXPORT_JOBS, export.pk))

    export = export_run(export=export)

    assert export.status == "running" and export.files == []
    assert not (media / "exports" / str(export.pk)).exists()
    assert list((media / "exports" / ".partial").iterdir()) == []


def test_an_export_run_again_replaces_what_an_earlier_attempt_published(media):
    export = _export(status="running", attempts=1, heartbeat_at=timezone.now() - timedelta(hours=1))
    stale = media / "exports" / str(export.pk)
    stale.mkdir(parents=True)
    (stale / "half-written.jsonl").write_text("{")

    export = export_run(export=export)

    assert export.status == "done" and export.attempts == 2
    names = sorted(p.name for p in export.directory.iterdir())
    assert names == sorted([export.files[0]["name"], export.manifest_name])

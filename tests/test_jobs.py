"""Durable jobs (common/jobs.py): the claim, the owner-only writes and the sweep, in process.

The real thing, with worker processes killed mid-job, is in test_job_recovery_worker.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotators.models import CampaignSnapshot
from common.jobs import job_claim, job_kinds, job_update, jobs_sweep
from exports.models import Export
from exports.services import EXPORT_JOBS, export_run
from imports.models import ImportJob
from imports.services import IMPORT_JOBS, import_job_create, import_job_run
from labeling.models import Solution
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


def test_every_kind_of_job_is_registered_with_the_sweep():
    assert set(job_kinds()) == {"imports", "exports", "snapshots", "active_learning"}


def test_a_job_is_claimed_once_and_counts_its_attempt():
    export = _export()
    assert job_claim(EXPORT_JOBS, export.pk) == 1
    assert job_claim(EXPORT_JOBS, export.pk) is None  # a second message for the same job
    export.refresh_from_db()
    assert (export.status, export.attempts) == ("running", 1)
    assert export.heartbeat_at is not None and export.started_at is not None


def test_only_the_attempt_that_owns_a_job_writes_to_it():
    export = _export()
    attempt = job_claim(EXPORT_JOBS, export.pk)
    assert job_update(EXPORT_JOBS, export.pk, attempt, progress=0.5)
    assert not job_update(EXPORT_JOBS, export.pk, attempt + 1, progress=0.9)
    export.refresh_from_db()
    assert export.progress == 0.5


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

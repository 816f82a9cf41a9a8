"""A Celery worker process really runs an export, and the task itself behaves."""

from __future__ import annotations

import hashlib
import json

import pytest

from common.jobs import job_task
from exports.models import Export
from exports.services import EXPORT_JOBS, export_create
from tests.factories import make_campaign, make_labelled, make_solution
from tests.waiting import log_tail, wait_until

WORKER_DEADLINE_S = 120  # a failure bound, not a performance assertion


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


def _campaign():
    campaign = make_campaign(slug="worker")
    for ratings in ([1, 1, -1], [1, 0], [-1]):
        make_labelled(solution=make_solution(campaign=campaign), ratings=ratings)
    return campaign


@pytest.mark.celery
@pytest.mark.slow
def test_a_celery_worker_process_runs_an_export_enqueued_on_commit(media, celery_worker_process):
    export = export_create(campaign=_campaign(), fmt="trl")  # autocommit: sent at once

    def finished() -> bool:
        export.refresh_from_db()
        return export.is_finished

    wait_until(
        finished,
        what="the worker to finish the export",
        seconds=WORKER_DEADLINE_S,
        every=0.2,
        processes=[celery_worker_process],
        log=log_tail(celery_worker_process),
    )
    log = celery_worker_process.log_path.read_text(errors="replace")
    assert export.status == Export.Status.DONE, f"export {export.status}: {export.error}\n{log}"
    assert "exports.export_run" in log  # the worker process ran it, not this one
    (entry,) = export.files
    content = (export.directory / entry["name"]).read_bytes()
    assert hashlib.sha256(content).hexdigest() == entry["sha256"]
    rows = [json.loads(line) for line in content.decode().splitlines()]
    assert [r["labels"] for r in rows] == [[True, True, False], [True, True], [False]]
    assert export.progress == 1.0
    assert export.counts["all"]["records"] == 3
    assert (export.directory / export.manifest_name).is_file()


def export_run_task(export_id: int) -> str:
    """The export kind's Celery task, called here as a worker calls it."""
    return job_task(EXPORT_JOBS)(export_id)


@pytest.mark.django_db
def test_the_task_runs_the_export_and_leaves_a_finished_one_alone(media):
    export = Export.objects.create(campaign=_campaign(), format="csv")
    assert export_run_task(export.pk) == Export.Status.DONE
    export.refresh_from_db()
    finished_at = export.finished_at
    assert export.files[0]["records"] == 6
    assert export_run_task(export.pk) == Export.Status.DONE  # a redelivered message
    export.refresh_from_db()
    assert export.finished_at == finished_at


@pytest.mark.django_db
def test_the_task_drops_a_message_for_a_deleted_export():
    assert export_run_task(987654) == "missing"


@pytest.mark.django_db
def test_a_failed_export_records_its_error(media):
    export = Export.objects.create(campaign=_campaign(), format="trl", policy={"neutral": "maybe"})
    with pytest.raises(ValueError):
        export_run_task(export.pk)
    export.refresh_from_db()
    assert export.status == Export.Status.FAILED
    assert "neutral" in export.error

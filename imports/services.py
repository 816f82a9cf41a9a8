"""Uploads: an uploaded file becomes an import job that a Celery worker runs with ``import_file``.

Views and the API call ``import_job_create``; the task calls ``import_job_run``. An import that
adds solutions publishes ``labeling.events.solutions_imported`` once it has committed.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone
from django.utils.text import get_valid_filename

from common.jobs import JobBeat
from imports.models import ImportJob
from labeling import events
from labeling.models import (
    Campaign,
    Solution,
)

log = logging.getLogger(__name__)


class ImportRefused(Exception):
    """An upload that cannot become an import job; the text is shown to the person."""

    code = "refused"


def upload_limit_bytes() -> int:
    return settings.STEPWISE_MAX_UPLOAD_MB * 1024 * 1024


def upload_too_large_message(size: int) -> str:
    return (
        f"The file is {size / 1024 / 1024:.1f} MB; uploads are limited to "
        f"{settings.STEPWISE_MAX_UPLOAD_MB} MB (STEPWISE_MAX_UPLOAD_MB). Split it, or import it "
        "with `python manage.py import_solutions` on the server."
    )


def import_job_create(
    *,
    campaign: Campaign,
    created_by: AbstractBaseUser | None,
    upload: UploadedFile,
    fmt: str,
    as_gold: str | None = None,
    generator: str = "",
    grade: bool = True,
) -> ImportJob:
    """Store an uploaded file under ``MEDIA_ROOT/imports/<job>/`` and queue its import.

    The file is checked by the importer in the worker (all or nothing), so an upload returns at
    once whatever its size; the job row carries the outcome.
    """
    from imports.service import FORMATS
    from imports.tasks import import_run_task

    if fmt not in FORMATS:
        raise ImportRefused(f"Unknown format {fmt!r}; one of {', '.join(FORMATS)}.")
    if as_gold not in (None, "", Solution.Kind.QUALITY_CONTROL, Solution.Kind.SCREENING):
        raise ImportRefused("Gold solutions are either quality control (qc) or screening.")
    if upload.size > upload_limit_bytes():
        raise ImportRefused(upload_too_large_message(upload.size))
    options = {k: v for k, v in {"as_gold": as_gold, "generator": generator}.items() if v}
    name = get_valid_filename(Path(upload.name or "upload.jsonl").name) or "upload.jsonl"
    with transaction.atomic():
        job = ImportJob.objects.create(
            campaign=campaign,
            created_by=created_by,
            file_name=name[:255],
            format=fmt,
            options=options,
            grade=grade,
        )
        job.stored_path = f"imports/{job.pk}/{name}"
        job.path.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with open(job.path, "wb") as out:
            for chunk in upload.chunks():
                digest.update(chunk)
                out.write(chunk)
        job.size, job.sha256 = job.path.stat().st_size, digest.hexdigest()
        job.save(update_fields=["stored_path", "size", "sha256"])
        transaction.on_commit(lambda: import_run_task.delay(job.pk))
    return job


class ImportProgress:
    """An import's phase and progress, written to its row every half second by a ``JobBeat``.

    The import writes inside one long transaction; progress written there would only appear at
    its commit, so the beat writes it through its own connection and the page sees it as it
    happens. A tick writes only what changed.
    """

    EVERY_S = 0.5

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.phase, self.progress = "validating", 0.0
        self.written: tuple[str, float] | None = None
        self.beat = JobBeat(self._write, every=self.EVERY_S, name=f"import-{job_id}-progress")

    def report(self, phase: str, progress: float) -> None:
        self.phase, self.progress = phase, progress

    def __enter__(self) -> ImportProgress:
        self.beat.start()
        return self

    def __exit__(self, *exc) -> None:
        self.beat.stop()

    def _write(self) -> None:
        now = (self.phase, round(self.progress, 3))
        if now != self.written:
            ImportJob.objects.filter(pk=self.job_id, status=ImportJob.Status.RUNNING).update(
                phase=now[0], progress=now[1]
            )
            self.written = now


def import_job_run(*, job: ImportJob) -> ImportJob:
    """Run an uploaded import (the Celery task): claim the job, import, record the outcome.

    A job runs once: a repeated message finds it no longer pending and leaves it alone. The file
    is deleted afterwards (its size and sha256 stay on the row).
    """
    from imports.service import ImportValidationError, import_file

    claimed = ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.PENDING).update(
        status=ImportJob.Status.RUNNING, started_at=timezone.now(), phase="validating"
    )
    if not claimed:
        job.refresh_from_db()
        return job
    fields: dict[str, Any]
    try:
        with ImportProgress(job.pk) as writer:
            result = import_file(
                job.path,
                campaign=job.campaign,
                fmt=job.format,
                grade=job.grade,
                progress=writer.report,
                import_job_id=job.pk,
                **job.options,
            )
    except ImportValidationError as error:
        fields = {
            "status": ImportJob.Status.FAILED,
            "errors": [
                {"file": e.file, "line": e.line, "field": e.field, "message": e.message}
                for e in error.errors
            ],
            "errors_truncated": error.truncated,
        }
    except Exception as error:
        log.exception("import job %s failed", job.pk)
        fields = {
            "status": ImportJob.Status.FAILED,
            "errors": [
                {
                    "file": job.file_name,
                    "line": None,
                    "field": "",
                    "message": "the import stopped with an internal error "
                    f"({type(error).__name__}); nothing was written",
                }
            ],
        }
    else:
        fields = {
            "status": ImportJob.Status.DONE,
            "progress": 1.0,
            "counts": {
                name: getattr(result, name)
                for name in (
                    "lines",
                    "problems_created",
                    "solutions_created",
                    "solutions_existing",
                    "steps_created",
                    "assignments_created",
                    "assignments_existing",
                    "step_labels_created",
                    "users_created",
                    "solutions_graded",
                )
            }
            | {"seconds": round(result.seconds, 2)},
        }
    fields |= {"phase": "", "finished_at": timezone.now()}
    ImportJob.objects.filter(pk=job.pk).update(**fields)
    shutil.rmtree(job.path.parent, ignore_errors=True)
    job.refresh_from_db()
    if job.status == ImportJob.Status.DONE and job.counts.get("solutions_created"):
        events.publish(
            events.solutions_imported,
            campaign_id=job.campaign_id,
            solutions_created=job.counts["solutions_created"],
            labels_created=job.counts.get("step_labels_created", 0),
        )
    return job

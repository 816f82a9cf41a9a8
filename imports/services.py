"""Uploads: an uploaded file becomes an import job that a Celery worker runs.

Views and the API call ``import_job_create``; the job kind ``IMPORT_JOBS`` (``common.jobs``) runs
it in a worker (``import_job_run`` in this process). An import that adds solutions publishes
``labeling.events.solutions_imported`` once it has committed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils.text import get_valid_filename

from common.jobs import DONE, FAILED, JobAttempt, JobKind, JobPage, job_run, stage_pause
from common.storage import storage_local_file, storage_local_path
from imports import sniff
from imports.models import ImportJob
from labeling import events
from labeling.models import (
    Campaign,
    Solution,
)
from labeling.permissions import MANAGE

log = logging.getLogger(__name__)


class ImportRefused(Exception):
    """An upload that cannot become an import job; the text is shown to the person."""

    code = "refused"
    http_status = 400


class UploadNotStored(ImportRefused):
    """The file storage could not take the upload (an unwritable or full media folder, a bucket
    that refuses): the server's fault, said as such (503), without the server's paths; the
    web process's log has the whole error. Nothing is imported."""

    code = "storage_unavailable"
    http_status = 503


def upload_limit_bytes() -> int:
    return settings.STEPWISE_MAX_UPLOAD_MB * 1024 * 1024


def declared_length(request) -> int:
    """The request's Content-Length, 0 when it is missing or not a number (as Django reads it:
    a made-up header is no reason for a 500)."""
    value = str(request.META.get("CONTENT_LENGTH") or "")
    return int(value) if value.isascii() and value.isdigit() and len(value) < 19 else 0


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
    split: str = "auto",
) -> ImportJob:
    """Store an uploaded file as ``imports/<job>/<name>`` in the file storage and queue its import.

    The file is checked by the importer in the worker (all or nothing), so an upload returns at
    once whatever its size; the job row carries the outcome. The storage is shared by every
    process (``common.storage``), so any worker can read what this web process stored. Only a
    first look happens here (``imports.sniff``): a binary or non-UTF-8 file is refused with one
    message, ``fmt="auto"`` takes the format the first record has, and a chosen format that the
    first record does not have is refused with the one it looks like.
    """
    from imports.pipeline import FORMATS

    if upload.size > upload_limit_bytes():
        raise ImportRefused(upload_too_large_message(upload.size))
    fmt = _format_checked(upload, fmt)
    if fmt not in FORMATS:
        raise ImportRefused(f"Unknown format {fmt!r}; one of {', '.join(FORMATS)}.")
    if as_gold not in (None, "", Solution.Kind.QUALITY_CONTROL, Solution.Kind.SCREENING):
        raise ImportRefused("Gold solutions are either quality control (qc) or screening.")
    from imports.splitting import SplitError, check_mode

    try:
        split = check_mode(split)
    except SplitError as e:
        raise ImportRefused(str(e)) from None
    chosen = {"as_gold": as_gold, "generator": generator}
    if split != "auto":
        chosen["split"] = split
    options = {k: v for k, v in chosen.items() if v}
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
        digest, size = hashlib.sha256(), 0
        for chunk in upload.chunks():
            digest.update(chunk)
            size += len(chunk)
        try:
            job.stored_path = default_storage.save(f"imports/{job.pk}/{name}", upload)
        except OSError as error:  # the job's row goes with the transaction
            log.exception("the upload of campaign %s could not be stored", campaign.slug)
            reason = error.strerror or type(error).__name__
            raise UploadNotStored(
                f"The server could not store the upload ({type(error).__name__}: {reason}); "
                "nothing was imported. Tell the site's operator: its file storage needs "
                "attention."
            ) from None
        job.size, job.sha256 = size, digest.hexdigest()
        job.save(update_fields=["stored_path", "size", "sha256"])
        IMPORT_JOBS.send(job.pk)
    return job


def _format_checked(upload: UploadedFile, fmt: str) -> str:
    """The format to import ``upload`` with, after a first look at it (see ``imports.sniff``)."""
    found = sniff.sniff(upload.chunks())
    upload.seek(0)
    if found.problem:
        raise ImportRefused(found.problem)
    if fmt in ("", sniff.AUTO):
        if found.format is None:
            raise ImportRefused(
                "The format could not be guessed from the file's first record: choose it."
            )
        return found.format
    if found.format is not None and found.format != fmt:
        raise ImportRefused(sniff.mismatch_message(chosen=fmt, looks_like=found.format))
    return fmt


COUNTS = (
    "lines",
    "problems_created",
    "solutions_created",
    "solutions_existing",
    "solutions_gold_applied",
    "steps_created",
    "assignments_created",
    "assignments_existing",
    "step_labels_created",
    "users_created",
    "solutions_graded",
)


def import_job_run(*, job: ImportJob) -> ImportJob:
    """Run an uploaded import in this process, as its Celery task does (``common.jobs.job_run``).

    A job that is finished, or taken by a live worker, is returned as it is.
    """
    return job_run(IMPORT_JOBS, job) or job


def _import_work(job: ImportJob, attempt: JobAttempt) -> None:
    """Import the job's file and record the outcome (the import kind's work).

    The import's counts are written to the job in the import's own transaction, and only while
    this attempt owns the job, so the data and the record commit together or not at all: an
    attempt after a killed worker either imports the whole file (nothing had committed) or only
    finishes the job, grading what was left (the import had committed, the worker died while
    grading). The file is deleted afterwards (its size and sha256 stay).
    """
    from imports.pipeline import ImportValidationError

    fields: dict[str, Any]
    if job.counts:
        log.warning("import job %s had committed before its worker died: finishing it", job.pk)
        fields = {"progress": 1.0}
        if job.grade:
            fields["counts"] = job.counts | {"solutions_graded": _grade_rest(job, attempt)}
        attempt.finish(DONE, phase="", **fields)
    else:
        try:
            fields = _import(job, attempt)
        except ImportValidationError as error:
            attempt.finish(
                FAILED,
                phase="",
                errors=[
                    {"file": e.file, "line": e.line, "field": e.field, "message": e.message}
                    for e in error.errors
                ],
                errors_truncated=error.truncated,
            )
        else:
            attempt.finish(DONE, phase="", **fields)
    _upload_delete(job.stored_path)
    job.refresh_from_db()
    if job.status == ImportJob.Status.DONE and job.counts.get("solutions_created"):
        events.publish(
            events.solutions_imported,
            campaign_id=job.campaign_id,
            solutions_created=job.counts["solutions_created"],
            labels_created=job.counts.get("step_labels_created", 0),
        )


def _import(job: ImportJob, attempt: JobAttempt) -> dict[str, Any]:
    """Import the job's file; the fields of its ``done`` row."""
    from imports.pipeline import import_file

    def record(result) -> None:
        # Inside the import's transaction: the counts commit with the data, or neither does.
        stage_pause("imports.write")
        attempt.update(counts={name: getattr(result, name) for name in COUNTS})

    def progress(phase: str, share: float) -> None:
        attempt.report(phase=phase, progress=round(share, 3))

    with storage_local_file(job.stored_path) as path:
        result = import_file(
            path,
            campaign=job.campaign,
            fmt=job.format,
            grade=job.grade,
            progress=progress,
            before_commit=record,
            import_job_id=job.pk,
            **job.options,
        )
    return {
        "progress": 1.0,
        "counts": {name: getattr(result, name) for name in COUNTS}
        | {"seconds": round(result.seconds, 2)},
    }


def _grade_rest(job: ImportJob, attempt: JobAttempt) -> int:
    """Grade what the committed import left ungraded (its worker died while grading).

    The import's new solutions are not recorded one by one, so every ungraded solution of the
    campaign is tried; those that cannot be graded (no answer, no truth) stay as they were.
    """
    from labeling.grading import solutions_grade

    attempt.report(phase="grading", progress=0.0)
    result = solutions_grade(solutions=Solution.objects.filter(campaign=job.campaign))
    return result.graded


def _failed_fields(job: ImportJob, reason: str) -> dict[str, Any]:
    """What the upload page shows of a job that failed outside the importer's checks (the sweep
    gave up on it, or the import stopped with an error): the reason, as its one error."""
    return {
        "phase": "",
        "errors": [{"file": job.file_name, "line": None, "field": "", "message": reason}],
    }


IMPORT_JOBS = JobKind(
    name="imports",
    model=ImportJob,
    task="imports.import_run",
    work=_import_work,
    claim_fields={"phase": "validating", "progress": 0.0},
    failed_fields=_failed_fields,
    page=JobPage(
        template="imports/_import_job.html",
        url="imports:list",
        viewers=MANAGE,
        element="tr",
    ),
)


def _upload_delete(name: str) -> None:
    """Delete a finished job's upload (and its folder, on a filesystem storage)."""
    if not name:
        return
    default_storage.delete(name)
    local = storage_local_path(name)
    if local is not None:
        with contextlib.suppress(OSError):  # not empty: someone else's file
            local.parent.rmdir()


def import_job_delete(*, job: ImportJob) -> None:
    """Delete a failed import: its row and whatever is left of its upload.

    Only a failed job: a done one is the record of what was imported (its counts, who, when), and
    a pending or running one has a worker on it. A failed import wrote nothing, so nothing else
    goes.
    """
    if job.status != ImportJob.Status.FAILED:
        raise ImportRefused(
            f"Import {job.pk} is {job.status}: only a failed import can be deleted."
        )
    _upload_delete(job.stored_path)
    job.delete()


# The preview shows this many solutions in full, and reads the whole file for the rest: how
# many solutions it holds and the errors the import would refuse it for (at most PREVIEW_ERRORS).
PREVIEW_SOLUTIONS = 10
PREVIEW_ERRORS = 20


def import_preview(
    *, upload: UploadedFile, fmt: str, split: str = "auto", as_gold: str | None = None
) -> dict[str, Any]:
    """The first solutions of an upload as the import would cut them into steps, before it runs.

    Writes nothing. Returns ``{"solutions": [...], "total": n, "errors": [...]}``: the first
    ``PREVIEW_SOLUTIONS`` solutions with their problem, steps (shown and raw) and answer, how many
    the file holds, and the errors the import would refuse it for (lines that do not parse, ids
    used twice), each with its line. A file that is not text is refused as the upload refuses
    it (``ImportRefused``).
    """
    from imports.pipeline import FORMATS
    from imports.reading import duplicate_id, parse_line
    from imports.records import FieldError
    from imports.splitting import SplitError, check_mode

    fmt = _format_checked(upload, fmt)
    if fmt not in FORMATS:
        raise ImportRefused(f"Unknown format {fmt!r}; one of {', '.join(FORMATS)}.")
    try:
        split = check_mode(split)
    except SplitError as e:
        raise ImportRefused(str(e)) from None
    options = {k: v for k, v in {"split": split, "as_gold": as_gold}.items() if v}
    solutions: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    total = 0
    unique_ids: dict = {}
    solution_ids: dict = {}
    upload.seek(0)
    for number, raw in enumerate(upload, 1):
        if not raw.strip():
            continue
        try:
            parsed = parse_line(raw, FORMATS[fmt].parse, options)
        except FieldError as e:
            if len(errors) < PREVIEW_ERRORS:
                errors.append({"line": number, "field": e.field, "message": e.message})
            continue
        parsed = [s for s in parsed if not s.problem_only]  # a problem alone shows no solution
        total += len(parsed)
        for s in parsed:
            duplicate = duplicate_id(s, number, unique_ids, solution_ids)
            if duplicate is not None and len(errors) < PREVIEW_ERRORS:
                errors.append({"line": number, "field": duplicate[0], "message": duplicate[1]})
        for s in parsed[: max(PREVIEW_SOLUTIONS - len(solutions), 0)]:
            raws = s.raw_steps or s.steps
            solutions.append(
                {
                    "line": number,
                    "problem": s.problem.text,
                    "generator": s.generator,
                    "answer": s.answer,
                    "steps": [
                        {"text": t, "raw": r if r != t else ""}
                        for t, r in zip(s.steps, raws, strict=True)
                    ],
                }
            )
    upload.seek(0)
    return {
        "solutions": solutions,
        "total": total,
        "errors": errors,
        "max_errors": PREVIEW_ERRORS,
        "split": split,
    }

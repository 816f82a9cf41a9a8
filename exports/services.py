"""Export workflows: create an export job, run it. Views, the API and the job kind call these.

Export jobs are one kind of job (``common.jobs``): ``EXPORT_JOBS``. Their task runs on the
``learning`` queue with the other heavy work (settings, ``CELERY_TASK_ROUTES``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from common.jobs import DONE, JobAttempt, JobKind, JobPage, job_run, stage_pause
from common.storage import storage_publish_dir, storage_scratch_dir
from exports.files import write_export
from exports.formats.registry import format_for, format_options, get_format
from exports.lengths import check_declared_tokenizer
from exports.models import Export
from exports.policy import LabelPolicy
from labeling.curation.filters import SolutionFilter
from labeling.models import Campaign
from labeling.permissions import MANAGE

log = logging.getLogger(__name__)


def export_create(
    *,
    campaign: Campaign,
    fmt: str,
    policy: LabelPolicy | None = None,
    options: dict[str, Any] | None = None,
    created_by=None,
    selection: SolutionFilter | None = None,
) -> Export:
    """Record an export job and have a Celery worker run it once the row is committed.

    The format and its options are checked here, so a bad request fails at once instead of in
    the worker; a tokenizer must be one the operator declared (no path from the web).
    ``selection`` (the data browser's filters) exports only the solutions it matches.
    """
    policy = policy or LabelPolicy()
    spec = format_for(campaign, fmt)
    checked = format_options(spec, options)
    check_declared_tokenizer(checked.get("tokenizer", ""))
    export = Export.objects.create(
        campaign=campaign,
        format=spec.name,
        policy=policy.to_dict(),
        options=checked,
        created_by=created_by,
        selection=selection.to_params(with_sort=False) if selection else {},
    )
    EXPORT_JOBS.send(export.pk)
    return export


def export_run(*, export: Export) -> Export:
    """Run an export in this process, as its Celery task does (``common.jobs.job_run``).

    A repeated message, or one for a finished export, leaves it alone; a failure is recorded on
    the row, then raised.
    """
    return job_run(EXPORT_JOBS, export) or export


def _export_work(export: Export, attempt: JobAttempt) -> None:
    """Write the export's files, with progress, then publish them and record the result.

    The files are written under a temporary name and published in one step
    (``common.storage.storage_publish_dir``: a rename on a filesystem) in the same transaction
    that marks the export done, and only while this attempt owns it; so an attempt after a
    killed worker starts over, and nobody ever reads half an export.
    """

    def progress(done: int, total: int) -> None:
        if total:
            attempt.report(progress=round(done / total, 3))

    spec = get_format(export.format)
    with storage_scratch_dir(export.storage_dir) as scratch:
        manifest = write_export(
            campaign=export.campaign,
            fmt=export.format,
            out=scratch / f"{export.campaign.slug}-{spec.name}{spec.extension}",
            policy=LabelPolicy.from_dict(export.policy),
            options=export.options,
            progress=progress,
            selection=SolutionFilter.from_params(export.selection) if export.selection else None,
        )
        stage_pause("exports.write")
        with transaction.atomic():
            attempt.lock()
            storage_publish_dir(scratch, export.storage_dir)
            attempt.finish(
                DONE,
                progress=1.0,
                manifest=manifest,
                counts=manifest["counts"],
                files=manifest["files"],
            )


EXPORT_JOBS = JobKind(
    name="exports",
    model=Export,
    task="exports.export_run",
    work=_export_work,
    claim_fields={"progress": 0.0},
    page=JobPage(
        template="exports/_export_job.html",
        url="exports:list",
        viewers=MANAGE,
        element="tr",
    ),
)

"""Export workflows: create an export job, run it. Views, the API and tasks call these.

Export jobs are durable (``common.jobs``): ``EXPORT_JOBS`` is their kind, which the sweep looks
after. Their task runs on the ``learning`` queue with the other heavy work (settings).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import transaction
from django.utils import timezone

from common.jobs import (
    JobKind,
    JobSuperseded,
    job_claim,
    job_heartbeat,
    job_update,
    stage_pause,
)
from common.storage import storage_publish_dir, storage_scratch_dir
from exports.files import write_export
from exports.formats.registry import format_options, get_format
from exports.models import Export
from exports.policy import LabelPolicy
from labeling.curation.filters import SolutionFilter
from labeling.models import Campaign

# How often a running export writes its progress: often enough for a page polling every second,
# rarely enough that a million-label export spends nothing on it.
PROGRESS_EVERY_S = 0.5

log = logging.getLogger(__name__)


def _send(export_id: int) -> None:
    from exports.tasks import export_run_task

    transaction.on_commit(lambda: export_run_task.delay(export_id))


EXPORT_JOBS = JobKind(name="exports", model=Export, send=_send)


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
    the worker. ``selection`` (the data browser's filters) exports only the solutions it matches.
    """
    policy = policy or LabelPolicy()
    spec = get_format(fmt)
    export = Export.objects.create(
        campaign=campaign,
        format=spec.name,
        policy=policy.to_dict(),
        options=format_options(spec, options),
        created_by=created_by,
        selection=selection.to_params(with_sort=False) if selection else {},
    )
    EXPORT_JOBS.send(export.pk)
    return export


def export_run(*, export: Export) -> Export:
    """Write the export's files, with progress, then publish them and record the result.

    The claim (``common.jobs.job_claim``) lets one attempt at a time run the export: a repeated
    message, or one for a finished export, leaves it alone. The files are written under a
    temporary name and published in one step (``common.storage.storage_publish_dir``: a rename
    on a filesystem) in the same transaction that marks the export done, and only while this
    attempt owns it; so an attempt after a killed worker starts over, and nobody ever reads
    half an export. A failure is recorded on the row, then raised.
    """
    attempt = job_claim(EXPORT_JOBS, export.pk, progress=0.0)
    export.refresh_from_db()
    if attempt is None:
        return export
    last_write = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last_write
        now = time.monotonic()
        if now - last_write >= PROGRESS_EVERY_S and total:
            last_write = now
            job_update(EXPORT_JOBS, export.pk, attempt, progress=done / total)

    try:
        spec = get_format(export.format)
        with (
            job_heartbeat(EXPORT_JOBS, export.pk, attempt),
            storage_scratch_dir(export.storage_dir) as scratch,
        ):
            manifest = write_export(
                campaign=export.campaign,
                fmt=export.format,
                out=scratch / f"{export.campaign.slug}-{spec.name}{spec.extension}",
                policy=LabelPolicy.from_dict(export.policy),
                options=export.options,
                progress=progress,
                selection=(
                    SolutionFilter.from_params(export.selection) if export.selection else None
                ),
            )
            stage_pause("exports.write")
            with transaction.atomic():
                owned = (
                    Export.objects.select_for_update()
                    .filter(pk=export.pk, attempts=attempt, status=Export.Status.RUNNING)
                    .exists()
                )
                if not owned:
                    raise JobSuperseded()
                storage_publish_dir(scratch, export.storage_dir)
                Export.objects.filter(pk=export.pk).update(
                    status=Export.Status.DONE,
                    progress=1.0,
                    manifest=manifest,
                    counts=manifest["counts"],
                    files=manifest["files"],
                    finished_at=timezone.now(),
                )
    except JobSuperseded:
        log.warning("export %s was taken over by a later attempt", export.pk)
    except Exception as exc:
        job_update(
            EXPORT_JOBS,
            export.pk,
            attempt,
            status=Export.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:5000],
            finished_at=timezone.now(),
        )
        raise
    export.refresh_from_db()
    return export

"""Export workflows: create an export job, run it. Views, the API and tasks call these."""

from __future__ import annotations

import shutil
import time
from typing import Any

from django.db import transaction
from django.utils import timezone

from exports.formats.registry import format_options, get_format
from exports.models import Export
from exports.policy import LabelPolicy
from exports.writer import write_export
from labeling.filters import SolutionFilter
from labeling.models import Campaign

# How often a running export writes its progress: often enough for a page polling every second,
# rarely enough that a million-label export spends nothing on it.
PROGRESS_EVERY_S = 0.5


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
    from exports.tasks import export_run_task

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
    transaction.on_commit(lambda: export_run_task.delay(export.pk))
    return export


def export_run(*, export: Export) -> Export:
    """Write the export's files under its directory, with progress, and record the result.

    Safe to run again (a redelivered task): a finished export is left alone, an unfinished one
    starts over in a clean directory. A failure is recorded on the row, then raised.
    """
    if export.status == Export.Status.DONE:
        return export
    export.status = Export.Status.RUNNING
    export.started_at = timezone.now()
    export.progress = 0.0
    export.error = ""
    export.save(update_fields=["status", "started_at", "progress", "error"])

    shutil.rmtree(export.directory, ignore_errors=True)
    spec = get_format(export.format)
    out = export.directory / f"{export.campaign.slug}-{spec.name}{spec.extension}"
    last_write = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last_write
        now = time.monotonic()
        if now - last_write >= PROGRESS_EVERY_S and total:
            last_write = now
            Export.objects.filter(pk=export.pk).update(progress=done / total)

    try:
        manifest = write_export(
            campaign=export.campaign,
            fmt=export.format,
            out=out,
            policy=LabelPolicy.from_dict(export.policy),
            options=export.options,
            progress=progress,
            selection=SolutionFilter.from_params(export.selection) if export.selection else None,
        )
    except Exception as exc:
        export.status = Export.Status.FAILED
        export.error = f"{type(exc).__name__}: {exc}"
        export.finished_at = timezone.now()
        export.save(update_fields=["status", "error", "finished_at"])
        raise
    export.status = Export.Status.DONE
    export.progress = 1.0
    export.manifest = manifest
    export.counts = manifest["counts"]
    export.files = manifest["files"]
    export.finished_at = timezone.now()
    export.save(update_fields=["status", "progress", "manifest", "counts", "files", "finished_at"])
    return export

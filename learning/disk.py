"""Where the disk goes: the media of every campaign by area, what the rules would reclaim.

``disk_usage()`` is what ``manage.py disk_usage`` prints and ``/metrics`` exports
(``stepwise_media_bytes``). Areas: ``prm`` (a campaign's checkpoints, run folders and feature
caches, ``prm/<slug>/``), ``exports`` (``exports/<id>/``), ``uploads`` (``imports/<job>/``), and
``orphans``: folders whose row is gone (an export, an upload or a campaign deleted before files
went with them), scratch that a killed job left more than a day ago (``.partial``), readiness
probes' leftovers. What is reclaimable is the retention rule's (``learning.retention``) and every
orphan; ``reclaim()`` deletes exactly that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from common.storage import (
    local_dir_size,
    media_delete,
    storage_dir_size,
    storage_listdir,
    storage_local_path,
)
from exports.models import Export
from imports.models import ImportJob
from labeling.models import Campaign
from learning.retention import prunable

SCRATCH_AGE_S = 24 * 3600  # scratch younger than this may belong to a job still running


@dataclass
class Usage:
    """One line of the report: an area (of a campaign, or ``""``), its bytes, and the stored
    directories that may go with the bytes they hold."""

    area: str
    campaign: str
    bytes: int
    reclaimable: list[str] = field(default_factory=list)
    reclaimable_bytes: int = 0


def _ids(prefix: str) -> dict[int, str]:
    dirs, _files = storage_listdir(prefix)
    return {int(name): f"{prefix}/{name}" for name in dirs if name.isdigit()}


def _old_scratch(prefix: str) -> list[str]:
    """Scratch folders under ``prefix/.partial`` older than a day (filesystem storage only:
    elsewhere scratch is a local temporary folder)."""
    folder = storage_local_path(f"{prefix}/.partial")
    if folder is None or not folder.is_dir():
        return []
    cutoff = time.time() - SCRATCH_AGE_S
    return [
        f"{prefix}/.partial/{p.name}"
        for p in sorted(folder.iterdir())
        if p.stat().st_mtime < cutoff
    ]


def disk_usage() -> list[Usage]:
    """Every campaign's media by area, then the orphans."""
    rows: list[Usage] = []
    exports = _ids("exports")
    uploads = _ids("imports")
    export_owner = dict(Export.objects.values_list("pk", "campaign__slug"))
    upload_owner = dict(ImportJob.objects.values_list("pk", "campaign__slug"))
    campaigns = list(Campaign.objects.order_by("slug"))
    for campaign in campaigns:
        doomed = prunable(campaign)
        rows.append(
            Usage(
                "prm",
                campaign.slug,
                storage_dir_size(f"prm/{campaign.slug}"),
                doomed,
                sum(storage_dir_size(p) for p in doomed),
            )
        )
        for area, found, owner in (
            ("exports", exports, export_owner),
            ("uploads", uploads, upload_owner),
        ):
            mine = [p for pk, p in found.items() if owner.get(pk) == campaign.slug]
            rows.append(Usage(area, campaign.slug, sum(storage_dir_size(p) for p in mine)))
    slugs = {c.slug for c in campaigns}
    prm_dirs, _ = storage_listdir("prm")
    orphans = [f"prm/{name}" for name in prm_dirs if name not in slugs]
    orphans += [p for pk, p in exports.items() if pk not in export_owner]
    orphans += [p for pk, p in uploads.items() if pk not in upload_owner]
    orphans += _old_scratch("exports")
    for slug in sorted(slugs):
        for run in storage_listdir(f"prm/{slug}")[0]:
            orphans += _old_scratch(f"prm/{slug}/{run}")
    readyz_dirs, readyz_files = storage_listdir("readyz")
    if readyz_dirs or readyz_files:
        orphans.append("readyz")
    sizes = [storage_dir_size(p) for p in orphans]
    rows.append(Usage("orphans", "", sum(sizes), orphans, sum(sizes)))
    local = storage_local_path("")
    if local is None:  # a bucket: the local MEDIA_ROOT only holds scratch and caches
        from django.conf import settings

        rows.append(Usage("local", "", local_dir_size(Path(settings.MEDIA_ROOT))))
    return rows


def reclaim(rows: list[Usage]) -> int:
    """Delete what ``rows`` say may go; the bytes freed."""
    return media_delete([p for row in rows for p in row.reclaimable])

"""What the file storage keeps, and for how long: PRM checkpoints and run folders, orphans.

Every active-learning run writes a folder ``prm/<campaign>/run-<id>/``: the checkpoint it
publishes (``attempt-<n>/``, the model it registers), and scratch that only the run itself reads
(its training export, the ORM and the graded samples of best-of-N, an ensemble's members). With
``bow`` that is about 70 MB a run, for ever. The rule here keeps, per campaign:

- the **active** model's checkpoint (it orders the queue; the data browser scores with it);
- the checkpoints of the **last ``STEPWISE_PRM_KEEP``** model versions (to compare, to go back);
- every folder of a run that is still queued or running (it is writing there), and the whole
  folder of the runs that registered a kept model (the active-learning page's best-of-N command
  names its files) or are among the last ``STEPWISE_PRM_KEEP`` runs;

and deletes the rest: other runs' folders, the checkpoints of older versions wherever they are
(their rows stay, with their metrics, for the page's history), folders of runs that no longer
exist. Feature caches (``features-*.npz``, ``train-cache/``) stay: they only speed the next run
up. ``checkpoints_prune`` applies it to one campaign: the lead's run calls it after a run's last
transaction, beat calls ``media_retention`` every ``STEPWISE_RETENTION_SECONDS``, and
``manage.py disk_usage --reclaim`` applies it at once (docs/operations.md, "Disk").
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from django.conf import settings

from common.storage import media_delete, storage_dir_size, storage_listdir
from labeling.models import Campaign
from learning.models import ActiveLearningRun, PRMModel

log = logging.getLogger(__name__)

_RUN = re.compile(r"run-(\d+)")
UNFINISHED = (ActiveLearningRun.Status.QUEUED, ActiveLearningRun.Status.RUNNING)


def campaign_prm_media(campaign: Campaign) -> list[str]:
    """The campaign's PRM folder (checkpoints, run folders, feature caches): deleted with it."""
    return [f"prm/{campaign.slug}"]


@dataclass
class Pruned:
    """What a pruning deleted (or, with ``dry_run``, would delete): stored directories and the
    bytes they held."""

    prefixes: list[str] = field(default_factory=list)
    bytes: int = 0


def models_kept(campaign: Campaign) -> set[int]:
    """The models whose checkpoints stay: the active one, the last ``STEPWISE_PRM_KEEP``
    versions, and those of runs still queued or running."""
    keep = max(0, settings.STEPWISE_PRM_KEEP)
    models = PRMModel.objects.filter(campaign=campaign)
    kept = set(models.filter(is_active=True).values_list("pk", flat=True))
    kept |= set(models.order_by("-version").values_list("pk", flat=True)[:keep])
    kept |= set(
        ActiveLearningRun.objects.filter(campaign=campaign, status__in=UNFINISHED)
        .exclude(model=None)
        .values_list("model_id", flat=True)
    )
    return kept


def runs_kept(campaign: Campaign, kept_models: set[int]) -> set[int]:
    """The runs whose whole folder stays: queued or running, the last ``STEPWISE_PRM_KEEP``,
    and those that registered a kept model."""
    runs = ActiveLearningRun.objects.filter(campaign=campaign)
    kept = set(runs.filter(status__in=UNFINISHED).values_list("pk", flat=True))
    kept |= set(runs.order_by("-pk").values_list("pk", flat=True)[: settings.STEPWISE_PRM_KEEP])
    kept |= set(runs.filter(model_id__in=kept_models).values_list("pk", flat=True))
    return kept


def prunable(campaign: Campaign) -> list[str]:
    """The stored directories of ``campaign`` that the rule deletes."""
    root = f"prm/{campaign.slug}"
    kept_models = models_kept(campaign)
    kept_runs = runs_kept(campaign, kept_models)
    kept_paths = set(PRMModel.objects.filter(pk__in=kept_models).values_list("path", flat=True))
    doomed: list[str] = []
    dirs, _files = storage_listdir(root)
    for name in dirs:
        match = _RUN.fullmatch(name)
        if match is None or int(match.group(1)) in kept_runs:
            continue
        folder = f"{root}/{name}"
        if any(path == folder or path.startswith(folder + "/") for path in kept_paths):
            continue  # a kept model registered by a run that is otherwise gone: keep it
        doomed.append(folder)
    for model in PRMModel.objects.filter(campaign=campaign).exclude(pk__in=kept_models):
        inside = any(model.path.startswith(folder + "/") for folder in doomed)
        if model.path and not inside and storage_listdir(model.path) != ([], []):
            doomed.append(model.path)
    return doomed


def checkpoints_prune(campaign: Campaign, *, dry_run: bool = False) -> Pruned:
    """Apply the retention rule to ``campaign``: delete the checkpoints and run folders it does
    not keep. Safe to call at any time, from any process: what a queued or running run uses, and
    the active model, are always kept."""
    doomed = prunable(campaign)
    if dry_run:
        return Pruned(doomed, sum(storage_dir_size(p) for p in doomed))
    freed = media_delete(doomed)
    if doomed:
        log.info(
            "retention: deleted %d folders (%d bytes) of campaign %s",
            len(doomed),
            freed,
            campaign.slug,
        )
    return Pruned(doomed, freed)


def media_retention(*, dry_run: bool = False) -> Pruned:
    """``checkpoints_prune`` for every campaign (beat's task, ``disk_usage --reclaim``)."""
    total = Pruned()
    for campaign in Campaign.objects.order_by("pk"):
        pruned = checkpoints_prune(campaign, dry_run=dry_run)
        total.prefixes += pruned.prefixes
        total.bytes += pruned.bytes
    return total

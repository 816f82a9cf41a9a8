"""Disk that fills for ever (issue 41): the checkpoint retention rule (``learning.retention``),
a campaign's files deleted with it (``common.storage.campaign_media_register``), and
``manage.py disk_usage [--reclaim]`` (``learning.disk``), on real files under a media root."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from exports.models import Export
from imports.models import ImportJob
from labeling.models import Campaign
from learning.models import ActiveLearningRun, PRMModel
from learning.retention import checkpoints_prune
from tests.factories import make_campaign

pytestmark = pytest.mark.django_db

KB = 1024


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    settings.STORAGES = {**settings.STORAGES}  # a fresh default storage for the new root
    return settings.MEDIA_ROOT


def _write(media: Path, name: str, size: int) -> Path:
    path = media / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def _runs(media: Path, campaign: Campaign, versions: int, *, active: int) -> list:
    """``versions`` finished runs, each with its checkpoint and its scratch (as a real run
    leaves them: ``prm/<slug>/run-<id>/attempt-1/`` and the training export, the ORM)."""
    runs = []
    for version in range(1, versions + 1):
        run = ActiveLearningRun.objects.create(campaign=campaign, status="succeeded")
        folder = f"prm/{campaign.slug}/run-{run.pk}"
        run.model = PRMModel.objects.create(
            campaign=campaign,
            version=version,
            path=f"{folder}/attempt-1",
            is_active=version == active,
        )
        run.save(update_fields=["model"])
        _write(media, f"{folder}/attempt-1/model.pt", 64 * KB)
        _write(media, f"{folder}/labels.jsonl", 8 * KB)
        _write(media, f"{folder}/orm/model.pt", 64 * KB)
        runs.append(run)
    return runs


def test_retention_keeps_the_active_model_the_last_n_and_what_a_running_run_uses(media, settings):
    settings.STEPWISE_PRM_KEEP = 2
    campaign = make_campaign(slug="keep")
    runs = _runs(media, campaign, 5, active=2)
    running = ActiveLearningRun.objects.create(campaign=campaign, status="running")
    _write(media, f"prm/keep/run-{running.pk}/labels.jsonl", 8 * KB)
    _write(media, "prm/keep/run-99999/attempt-1/model.pt", 64 * KB)  # its row is gone
    _write(media, "prm/keep/features-abc.npz", 16 * KB)  # caches stay
    _write(media, "prm/keep/train-cache/items.npz", 16 * KB)
    other = _runs(media, make_campaign(slug="other"), 4, active=1)

    pruned = checkpoints_prune(campaign)

    def exists(run) -> bool:
        return (media / f"prm/keep/run-{run.pk}").exists()

    # Kept: v2 (active), v4 and v5 (the last two), the running run; gone: v1, v3, the orphan.
    assert [exists(run) for run in runs] == [False, True, False, True, True]
    assert exists(running)
    assert not (media / "prm/keep/run-99999").exists()
    assert (media / "prm/keep/features-abc.npz").exists()
    assert (media / "prm/keep/train-cache/items.npz").exists()
    assert pruned.bytes == 2 * (136 * KB) + 64 * KB  # two runs and the orphan
    assert sorted(pruned.prefixes) == sorted(
        [f"prm/keep/run-{runs[0].pk}", f"prm/keep/run-{runs[2].pk}", "prm/keep/run-99999"]
    )
    assert PRMModel.objects.filter(campaign=campaign).count() == 5  # the history stays
    assert all((media / f"prm/other/run-{run.pk}").exists() for run in other)
    assert checkpoints_prune(campaign).prefixes == []  # nothing more to do


def test_deleting_a_campaign_deletes_its_files(media, django_capture_on_commit_callbacks):
    campaign = make_campaign(slug="gone")
    _runs(media, campaign, 2, active=2)
    _write(media, "prm/gone/features-abc.npz", 16 * KB)
    export = Export.objects.create(campaign=campaign, format="trl", status="done")
    _write(media, f"exports/{export.pk}/gone.jsonl", 8 * KB)
    upload = ImportJob.objects.create(campaign=campaign, file_name="up.jsonl", format="jsonl")
    _write(media, f"imports/{upload.pk}/up.jsonl", 8 * KB)
    kept = make_campaign(slug="kept")
    _runs(media, kept, 1, active=1)
    kept_export = Export.objects.create(campaign=kept, format="trl", status="done")
    _write(media, f"exports/{kept_export.pk}/kept.jsonl", 8 * KB)

    with django_capture_on_commit_callbacks(execute=True):
        Campaign.objects.filter(pk=campaign.pk).delete()  # as the admin's bulk delete does

    assert not (media / "prm/gone").exists()
    assert not (media / f"exports/{export.pk}").exists()
    assert not (media / f"imports/{upload.pk}").exists()
    assert (media / "prm/kept").is_dir()
    assert (media / f"exports/{kept_export.pk}/kept.jsonl").is_file()


def test_disk_usage_reports_by_campaign_and_reclaims_the_rule_and_the_orphans(media, settings):
    settings.STEPWISE_PRM_KEEP = 1
    campaign = make_campaign(slug="du")
    _runs(media, campaign, 3, active=3)  # keeps v3 only: two run folders reclaimable
    export = Export.objects.create(campaign=campaign, format="trl", status="done")
    _write(media, f"exports/{export.pk}/du.jsonl", 8 * KB)
    _write(media, "exports/424242/lost.jsonl", 32 * KB)  # its export row is gone
    _write(media, "prm/deleted-campaign/run-1/attempt-1/model.pt", 64 * KB)
    _write(media, "readyz/host-1.txt", 5)

    out = io.StringIO()
    call_command("disk_usage", "--json", stdout=out)
    report = json.loads(out.getvalue())
    areas = {(a["campaign"], a["area"]): a for a in report["areas"]}
    assert areas[("du", "prm")]["bytes"] == 3 * 136 * KB
    assert areas[("du", "prm")]["reclaimable_bytes"] == 2 * 136 * KB
    assert areas[("du", "exports")]["bytes"] == 8 * KB
    assert areas[("", "orphans")]["bytes"] == 32 * KB + 64 * KB + 5
    assert report["reclaimable_bytes"] == 2 * 136 * KB + 32 * KB + 64 * KB + 5
    assert report["freed_bytes"] == 0

    text = io.StringIO()
    call_command("disk_usage", "--reclaim", stdout=text)
    assert "Freed" in text.getvalue()
    after = io.StringIO()
    call_command("disk_usage", "--json", stdout=after)
    report = json.loads(after.getvalue())
    assert report["reclaimable_bytes"] == 0
    assert report["total_bytes"] == 136 * KB + 8 * KB
    assert not (media / "exports/424242").exists() and not (media / "readyz").exists()
    assert (media / f"exports/{export.pk}/du.jsonl").is_file()


def test_beat_applies_the_rule_to_every_campaign(media, settings):
    settings.STEPWISE_PRM_KEEP = 1
    entry = settings.CELERY_BEAT_SCHEDULE["learning-media-retention"]
    assert entry["task"] == "learning.media_retention"
    from learning.tasks import media_retention_task

    first, second = make_campaign(slug="a"), make_campaign(slug="b")
    _runs(media, first, 2, active=2)
    _runs(media, second, 3, active=1)  # keeps v1 (active) and v3 (the last)
    result = media_retention_task()
    assert result == {"folders": 2, "bytes": 2 * 136 * KB}
    assert len(list((media / "prm/a").glob("run-*"))) == 1
    assert len(list((media / "prm/b").glob("run-*"))) == 2

"""Files through Django's storage API, on a storage that is not a local directory.

With Django's ``InMemoryStorage``, as with S3, uploads, exports and checkpoints must go through
the storage alone (a worker on another machine sees nothing of MEDIA_ROOT).
"""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from common.storage import (
    storage_local_dir,
    storage_local_path,
    storage_publish_dir,
    storage_scratch_dir,
)
from exports.models import Export
from exports.services import export_run
from imports.services import import_job_create, import_job_run
from labeling.models import Solution
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_labelled, make_member, make_solution

pytestmark = pytest.mark.django_db

GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"


@pytest.fixture(autouse=True)
def bucket(settings, tmp_path):
    """A storage without local paths; MEDIA_ROOT and VAR_DIR of the test's own."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    settings.VAR_DIR = tmp_path / "var"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }
    assert storage_local_path("anything") is None
    return default_storage


def test_an_upload_is_stored_read_and_removed_through_the_storage(bucket, settings):
    campaign = make_campaign()
    upload = SimpleUploadedFile("gsm8k.jsonl", GSM8K.read_bytes())
    job = import_job_create(
        campaign=campaign, created_by=None, upload=upload, fmt="jsonl", grade=False
    )
    assert bucket.open(job.stored_path).read() == GSM8K.read_bytes()
    assert not any(settings.MEDIA_ROOT.iterdir())

    job = import_job_run(job=job)

    assert job.status == "done", job.errors
    assert Solution.objects.filter(campaign=campaign).count() == job.counts["solutions_created"]
    assert not bucket.exists(job.stored_path)


def test_an_export_is_published_to_the_storage_and_downloaded_from_it(bucket, settings, client):
    campaign = make_campaign(slug="bucket")
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, -1])
    export = export_run(export=Export.objects.create(campaign=campaign, format="trl"))

    assert export.status == "done", export.error
    (entry,) = export.files
    stored = export.stored_file(entry["name"])
    content = bucket.open(stored).read()
    assert hashlib.sha256(content).hexdigest() == entry["sha256"]
    assert bucket.exists(export.stored_file(export.manifest_name))
    assert not (settings.MEDIA_ROOT / "exports").exists()

    client.force_login(make_member(campaign=campaign, role="manager").user)
    url = reverse(
        "exports:download", kwargs={"slug": campaign.slug, "pk": export.pk, "name": entry["name"]}
    )
    assert b"".join(client.get(url).streaming_content) == content


def test_a_published_directory_replaces_the_old_one_and_is_cached_once_for_loading(bucket):
    for version in ("old", "new"):
        with storage_scratch_dir("prm/c/run-1/attempt-1") as scratch:
            (scratch / "sub").mkdir()
            (scratch / "config.json").write_text(version)
            (scratch / "sub" / f"{version}.bin").write_bytes(b"x")
            storage_publish_dir(scratch, "prm/c/run-1/attempt-1")
    assert bucket.listdir("prm/c/run-1/attempt-1/sub")[1] == ["new.bin"]

    local = storage_local_dir("prm/c/run-1/attempt-1")
    assert (local / "config.json").read_text() == "new"
    assert (local / "sub" / "new.bin").is_file()
    assert storage_local_dir("prm/c/run-1/attempt-1") == local


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_active_learning_run_stores_its_checkpoint_and_a_retry_loads_it(bucket, settings):
    from learning.models import ActiveLearningRun
    from learning.run import active_learning_run
    from tests.al_data import demo_campaign

    campaign = demo_campaign(active_learning=True)
    run = active_learning_run(run=ActiveLearningRun.objects.create(campaign=campaign))

    assert run.status == "succeeded", run.error
    assert bucket.exists(f"{run.model.path}/config.json")
    assert bucket.exists(f"{run.model.path}/model.safetensors")
    assert not (settings.MEDIA_ROOT / run.model.path).exists()

    # A retry after the model was registered (its worker died in scoring) loads it from there.
    ActiveLearningRun.objects.filter(pk=run.pk).update(status="queued")
    again = active_learning_run(run=ActiveLearningRun.objects.get(pk=run.pk))
    assert again.status == "succeeded", again.error
    assert again.timings.get("reused_model") == run.model.version

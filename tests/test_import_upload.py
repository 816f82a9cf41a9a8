"""Uploading import files from the browser: stored, imported in the background, clear errors."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from imports.models import ImportJob
from imports.services import import_job_run
from labeling.models import Solution, Step
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_member
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db

GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"
PROCESSBENCH = FIXTURES / "processbench_samples" / "processbench_verbatim_samples.jsonl"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def campaign():
    return make_campaign(slug="up")


@pytest.fixture
def manager_client(client, campaign):
    client.force_login(make_member(campaign=campaign, role="manager").user)
    return client


def upload(client, campaign, name: str, content: bytes, **fields):
    data = {"format": "jsonl", "grade": "on", "file": SimpleUploadedFile(name, content)} | fields
    return client.post(reverse("imports:list", kwargs={"slug": campaign.slug}), data)


def test_an_upload_is_stored_and_queued_then_imported_with_its_counts(
    manager_client, campaign, django_capture_on_commit_callbacks
):
    content = GSM8K.read_bytes()
    with django_capture_on_commit_callbacks() as queued:
        response = upload(manager_client, campaign, "gsm8k.jsonl", content)

    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert (job.status, job.file_name, job.size, job.format) == (
        "pending",
        "gsm8k.jsonl",
        len(content),
        "jsonl",
    )
    assert job.path.read_bytes() == content
    assert len(queued) == 1  # the Celery task, sent once the row is committed

    job = import_job_run(job=job)

    assert job.status == "done" and job.progress == 1.0
    assert job.counts["solutions_created"] == Solution.objects.filter(campaign=campaign).count() > 0
    assert not job.path.exists()  # the upload is removed; its size and sha256 stay
    page = manager_client.get(reverse("imports:list", kwargs={"slug": campaign.slug}))
    assert f"{job.counts['solutions_created']} new solutions" in page.content.decode()


def test_a_bad_file_fails_whole_with_its_file_line_and_field(manager_client, campaign):
    good = GSM8K.read_text().splitlines()[0]
    content = f'{good}\nnot json\n{{"problem": "x", "solutions": [{{"steps": []}}]}}\n'.encode()
    upload(manager_client, campaign, "broken.jsonl", content)

    job = import_job_run(job=ImportJob.objects.get())

    assert job.status == "failed"
    assert job.errors[0]["file"] == "broken.jsonl" and job.errors[0]["line"] == 2
    assert "not valid JSON" in job.errors[0]["message"]
    assert job.errors[1]["line"] == 3 and job.errors[1]["field"]
    assert not Solution.objects.exists()  # all or nothing
    page = manager_client.get(
        reverse("imports:list", kwargs={"slug": campaign.slug})
    ).content.decode()
    assert "Nothing was imported" in page
    assert "<code>broken.jsonl:2</code>" in page


def test_gold_imports_become_screening_questions(manager_client, campaign):
    upload(
        manager_client,
        campaign,
        "pb.jsonl",
        PROCESSBENCH.read_bytes(),
        format="processbench",
        as_gold="screening",
    )

    job = import_job_run(job=ImportJob.objects.get())

    assert job.status == "done", job.errors
    assert job.options == {"as_gold": "screening"}
    assert set(Solution.objects.values_list("kind", flat=True)) == {"screening"}
    assert Step.objects.filter(gold_rating__isnull=False).exists()


def test_a_file_over_the_size_limit_is_refused_with_a_clear_message(
    manager_client, campaign, settings
):
    settings.STEPWISE_MAX_UPLOAD_MB = 1

    response = upload(manager_client, campaign, "big.jsonl", b"x" * (1024 * 1024 + 1))

    assert response.status_code in (400, 413)
    assert "uploads are limited to 1 MB (STEPWISE_MAX_UPLOAD_MB)" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_a_far_too_large_request_is_refused_before_its_file_is_read(
    manager_client, campaign, settings
):
    settings.STEPWISE_MAX_UPLOAD_MB = 1

    response = upload(manager_client, campaign, "huge.jsonl", b"x" * (3 * 1024 * 1024))

    assert response.status_code == 413
    assert "The file is 3.0 MB" in response.content.decode()


def test_a_job_runs_once(campaign):
    job = ImportJob.objects.create(
        campaign=campaign, file_name="x.jsonl", format="jsonl", status="done"
    )

    assert import_job_run(job=job).status == "done"
    assert ImportJob.objects.get().finished_at is None  # untouched


def test_the_status_row_polls_while_running_and_stops_when_finished(manager_client, campaign):
    job = ImportJob.objects.create(
        campaign=campaign,
        file_name="x.jsonl",
        format="jsonl",
        status="running",
        phase="writing",
        progress=0.42,
    )
    url = reverse(
        "labeling:job-status", kwargs={"slug": campaign.slug, "kind": "imports", "pk": job.pk}
    )

    running = manager_client.get(url, headers={"HX-Request": "true"}).content.decode()
    ImportJob.objects.filter(pk=job.pk).update(status="done", counts={"solutions_created": 5})
    done = manager_client.get(url, headers={"HX-Request": "true"}).content.decode()

    assert (
        'hx-trigger="every 2s"' in running
        and 'value="0.420"' in running
        and "running: writing" in running
    )
    assert "hx-trigger" not in done and "5 new solutions" in done


def _wait_for(predicate, what: str) -> bool:
    """Poll until ``predicate()`` holds (a failure bound, not a timing assertion)."""
    return wait_until(predicate, what=what, seconds=30.0, every=0.05)


def _attempt(job: ImportJob):
    """The import's job claimed by this process, as a worker claims it."""
    from common.jobs import JobAttempt, job_claim
    from imports.services import IMPORT_JOBS

    return JobAttempt(IMPORT_JOBS, job.pk, job_claim(IMPORT_JOBS, job.pk))


@pytest.mark.django_db(transaction=True)
def test_progress_is_written_by_its_own_connection():
    job = ImportJob.objects.create(campaign=make_campaign(), file_name="x.jsonl", format="jsonl")
    attempt = _attempt(job)
    with attempt.heartbeat():
        attempt.report(phase="writing", progress=0.5)
        seen = _wait_for(
            lambda: ImportJob.objects.get(pk=job.pk).progress == 0.5, "the reported progress"
        )

    assert seen
    assert ImportJob.objects.get(pk=job.pk).phase == "writing"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_progress_shows_while_the_import_transaction_is_still_open():
    from django.db import transaction

    campaign = make_campaign()
    job = ImportJob.objects.create(campaign=campaign, file_name="x.jsonl", format="jsonl")
    attempt = _attempt(job)
    with transaction.atomic():
        make_member(campaign=campaign)  # the import's writes, not committed yet
        with attempt.heartbeat():
            attempt.report(phase="writing", progress=0.25)
            assert _wait_for(
                lambda: _progress_elsewhere(job.pk) == 0.25, "the progress seen elsewhere"
            )


def _progress_elsewhere(pk: int) -> float:
    """The job's progress as another connection (a web request) sees it."""
    import threading

    from django.db import connection

    out = []

    def read():
        out.append(ImportJob.objects.get(pk=pk).progress)
        connection.close()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    return out[0]


def test_an_import_into_an_active_learning_campaign_with_a_model_queues_a_rescoring_run(
    manager_client, campaign, django_capture_on_commit_callbacks
):
    from learning.models import ActiveLearningRun, PRMModel

    campaign.active_learning = True
    campaign.save(update_fields=["active_learning"])
    upload(manager_client, campaign, "a.jsonl", GSM8K.read_bytes())
    import_job_run(job=ImportJob.objects.get())
    assert not ActiveLearningRun.objects.exists()  # no model yet: its first run comes from labels

    PRMModel.objects.create(campaign=campaign, version=1, backbone="bow", path="x", is_active=True)
    upload(manager_client, campaign, "b.jsonl", PROCESSBENCH.read_bytes(), format="processbench")
    with django_capture_on_commit_callbacks() as queued:
        import_job_run(job=ImportJob.objects.get(file_name="b.jsonl"))
    run = ActiveLearningRun.objects.get()
    assert (run.campaign, run.trigger, run.status) == (campaign, "auto", "queued")
    assert len(queued) == 1  # the run's task


QWEN = FIXTURES / "qwen25math_math_samples" / "math_cot.sample.jsonl"


def preview(client, campaign, content: bytes, htmx: bool = True, **fields):
    data = {"format": "jsonl", "file": SimpleUploadedFile("f.jsonl", content)} | fields
    headers = {"HX-Request": "true"} if htmx else {}
    url = reverse("imports:preview", kwargs={"slug": campaign.slug})
    return client.post(url, data, headers=headers)


def test_the_preview_shows_the_first_solutions_as_split_and_writes_nothing(
    manager_client, campaign
):
    response = preview(manager_client, campaign, GSM8K.read_bytes())
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="import-preview"' in html and "<h1>" not in html  # the partial alone
    # Issue 40: the preview showed only three solutions without saying of how many; it shows
    # the first ten and says how many the file holds (12 in this sample).
    assert html.count('class="preview-solution"') == 10
    assert "the first 10 of 12 solutions" in html
    assert "&lt;&lt;" in html  # the raw text with its calculator note, under the step
    assert not ImportJob.objects.exists() and not Solution.objects.exists()


def test_the_preview_follows_the_chosen_split(manager_client, campaign):
    import json

    record = {
        "problem": "p",
        "ground_truth_answer": "1",
        "solutions": [{"text": "Step 1: one.\nStep 2: two.\nStep 3: three."}],
    }
    content = (json.dumps(record) + "\n").encode()
    numbered = preview(manager_client, campaign, content, split="numbered").content.decode()
    assert numbered.count('<li class="step">') == 3
    whole = preview(manager_client, campaign, content, split=r"\n\n").content.decode()
    assert whole.count('<li class="step">') == 1
    bad = preview(manager_client, campaign, content, split="(")
    assert bad.status_code == 400 and "regular expression" in bad.content.decode()


def test_the_preview_without_javascript_is_the_page_with_the_preview(manager_client, campaign):
    response = preview(manager_client, campaign, QWEN.read_bytes(), htmx=False)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1>Imports</h1>" in html and 'class="preview-solution"' in html


def test_an_upload_keeps_its_split_for_the_import(manager_client, campaign):
    upload(manager_client, campaign, "gsm8k.jsonl", GSM8K.read_bytes(), split="paragraphs")
    job = ImportJob.objects.get()
    assert job.options == {"split": "paragraphs"}
    import_job_run(job=job)
    job.refresh_from_db()
    assert job.status == "done", job.errors
    refused = upload(manager_client, campaign, "g.jsonl", GSM8K.read_bytes(), split="(")
    assert refused.status_code == 400


def test_the_api_upload_takes_a_split(campaign):
    from tests.factories import api_client_for

    api = api_client_for(make_member(campaign=campaign, role="manager").user)
    response = api.post(
        f"/api/campaigns/{campaign.slug}/imports/",
        {
            "file": SimpleUploadedFile("g.jsonl", GSM8K.read_bytes()),
            "format": "jsonl",
            "split": "lines",
        },
        format="multipart",
    )
    assert response.status_code == 202, response.content
    assert response.json()["options"] == {"split": "lines"}


def test_the_preview_says_why_a_binary_file_is_refused(manager_client, campaign):
    response = preview(manager_client, campaign, b"\x00\x01binary\x00")
    html = response.content.decode()
    assert response.status_code == 400  # the partial, with the upload's own reason
    assert 'id="import-preview"' in html
    assert "This file is binary (it contains NUL bytes), not JSON Lines text" in html
    assert "__all__" not in html  # the reason alone, not the form's error dictionary


def test_the_preview_flags_ids_used_twice_as_the_upload_does(manager_client, campaign):
    import json

    def record(uid: str, problem: str) -> str:
        return json.dumps(
            {
                "problem": problem,
                "unique_id": uid,
                "ground_truth_answer": "1",
                "solutions": [{"text": "Step 1: one."}],
            }
        )

    content = "\n".join([record("p-1", "first"), record("p-1", "second")]).encode() + b"\n"
    html = preview(manager_client, campaign, content).content.decode()
    assert "The upload would refuse this file" in html
    assert "line 2 <code>unique_id</code>: &#x27;p-1&#x27; is already the unique_id" in html
    assert "all 2 solutions" in html


def test_every_aria_describedby_of_the_import_form_names_an_element_there(manager_client, campaign):
    import re

    html = manager_client.get(reverse("imports:list", kwargs={"slug": campaign.slug})).text
    described = [i for ids in re.findall(r'aria-describedby="([^"]+)"', html) for i in ids.split()]
    assert described  # the fields with help texts point at them
    for ident in described:
        assert f'id="{ident}"' in html, ident

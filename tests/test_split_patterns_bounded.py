"""A person's split pattern cannot stall a process: it runs on RE2, whose matching time is linear
in the text whatever the pattern, in the upload preview, the import and the worker alike.

``(a+)+$`` on a run of ``a`` and a ``!`` took 2.4 s at 24 characters on Python's backtracking
engine, about 4.8 times longer for every two more: at 5,000 characters it would not finish in
the age of the universe. Here the same pattern meets runs of 5,000 (the preview, the import, a
worker) and 1,000,000 characters (the splitter): each call comes back, which no backtracking
engine could; no test times anything.
"""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from imports.models import ImportJob
from imports.services import import_job_create, import_job_run
from imports.splitting import SplitError, check_mode, split_texts
from labeling.models import Step
from tests.factories import make_campaign, make_member
from tests.waiting import log_tail, wait_until

CATASTROPHIC = "(a+)+$"
RUN = "a" * 5000 + "!"


def test_the_catastrophic_pattern_runs_through_a_million_characters():
    text = "a" * 1_000_000 + "!"
    assert split_texts(text, CATASTROPHIC) == [text]
    # It matches the run at the end; its group is kept as a step, as re.split keeps groups.
    assert split_texts("one\n\n" + "a" * 1_000_000, CATASTROPHIC) == ["one", "a" * 1_000_000]
    matching = "x" + "a" * 1000 + "!y"  # a match: Python's re is quick here, and agrees
    assert split_texts(matching, "(a+)+!") == re.split("(a+)+!", matching) == ["x", "a" * 1000, "y"]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(?<=\.)\s+", "no lookaround"),
        (r"\s+(?=Step)", "no lookaround"),
        (r"(?<!\d)\n", "no lookaround"),
        (r"(\w)\1", "no backreferences"),
        (r"(?P<x>a)(?P=x)", "no backreferences"),
        ("a{1001}", "invalid repetition size"),
        ("(", "or a regular expression (missing )"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_saying_why(pattern, message):
    with pytest.raises(SplitError) as refused:
        check_mode(pattern)
    assert message in str(refused.value)


def _file(text: str) -> bytes:
    record = {"problem": "p", "ground_truth_answer": "1", "solutions": [{"text": text}]}
    return (json.dumps(record) + "\n").encode()


@pytest.fixture
def campaign(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return make_campaign(slug="patterns")


@pytest.mark.django_db
def test_the_preview_splits_with_the_catastrophic_pattern(client, campaign):
    client.force_login(make_member(campaign=campaign, role="manager").user)
    response = client.post(
        reverse("imports:preview", kwargs={"slug": campaign.slug}),
        {
            "format": "jsonl",
            "split": CATASTROPHIC,
            "file": SimpleUploadedFile("a.jsonl", _file(RUN)),
        },
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert response.content.decode().count('<li class="step">') == 1


@pytest.mark.django_db
def test_the_preview_refuses_a_lookbehind_with_a_400_saying_why(client, campaign):
    client.force_login(make_member(campaign=campaign, role="manager").user)
    response = client.post(
        reverse("imports:preview", kwargs={"slug": campaign.slug}),
        {
            "format": "jsonl",
            "split": r"(?<=\.)\s",
            "file": SimpleUploadedFile("a.jsonl", _file("x")),
        },
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 400
    assert "no lookaround" in response.content.decode()


@pytest.mark.django_db
def test_the_import_splits_with_the_catastrophic_pattern(campaign):
    job = import_job_create(
        campaign=campaign,
        created_by=None,
        upload=SimpleUploadedFile("a.jsonl", _file(RUN)),
        fmt="jsonl",
        split=CATASTROPHIC,
    )
    job = import_job_run(job=job)
    assert job.status == "done", job.errors
    assert list(
        Step.objects.filter(solution__campaign=campaign).values_list("text", flat=True)
    ) == [RUN]


@pytest.mark.celery
@pytest.mark.slow
def test_a_worker_splits_with_the_catastrophic_pattern(
    transactional_db, campaign, celery_worker_process
):
    job = import_job_create(  # autocommit: sent at once
        campaign=campaign,
        created_by=None,
        upload=SimpleUploadedFile("a.jsonl", _file(f"{RUN}\n\nb")),
        fmt="jsonl",
        split=CATASTROPHIC,
    )

    def finished() -> bool:
        job.refresh_from_db()
        return job.status in (ImportJob.Status.DONE, ImportJob.Status.FAILED)

    wait_until(
        finished,
        what="the worker to finish the import",
        seconds=180,  # the worker's start-up, not the split
        every=0.2,
        processes=[celery_worker_process],
        log=log_tail(celery_worker_process),
    )
    log = celery_worker_process.log_path.read_text(errors="replace")
    assert job.status == "done", f"{job.status}: {job.errors}\n{log}"
    assert "imports.import_run" in log  # the worker process ran it, not this one
    steps = Step.objects.filter(solution__campaign=campaign).values_list("text", flat=True)
    assert list(steps) == [f"{RUN}\n\nb"]  # $ is the end of the text: no match, one step


@pytest.mark.django_db
def test_a_generation_job_splits_its_samples_with_the_catastrophic_pattern(campaign, settings):
    import httpx

    from machines.generation import generation_job_create, generation_job_run
    from tests.factories import make_problem

    settings.STEPWISE_ENDPOINTS = [
        {"name": "m", "kind": "chat", "base_url": "http://model.test/v1", "models": ["m"]}
    ]
    make_problem(campaign=campaign, text="Say a lot of a.", ground_truth_answer="a")

    def answer(request: httpx.Request) -> httpx.Response:
        message = {"role": "assistant", "content": f"{RUN}\n\nb"}
        return httpx.Response(200, json={"choices": [{"message": message}], "usage": {}})

    job = generation_job_create(
        campaign=campaign,
        created_by=None,
        endpoint="m",
        samples_per_problem=2,
        split=CATASTROPHIC,
        enqueue=False,
    )
    job = generation_job_run(job=job, client=httpx.Client(transport=httpx.MockTransport(answer)))
    assert (job.status, job.solutions_created) == ("done", 1)  # the same text twice: one solution
    steps = Step.objects.filter(solution__campaign=campaign).values_list("text", flat=True)
    assert list(steps) == [f"{RUN}\n\nb"]

"""Uploads that help: the format is guessed from the first record, a wrong choice says which
format the file looks like, and a binary or non-UTF-8 file gets one clear message."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from imports.models import ImportJob
from imports.sniff import guess_format, sniff
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_member

pytestmark = pytest.mark.django_db

SAMPLES = {
    "jsonl": FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl",
    "prm800k": FIXTURES / "prm800k_raw_samples" / "phase2_train_examples.jsonl",
    "prm800k-trajectories": FIXTURES
    / "prm800k_phase1_trajectories"
    / "phase1_train.trajectories.sample.jsonl",
    "processbench": FIXTURES / "processbench_samples" / "processbench_verbatim_samples.jsonl",
}
QWEN = FIXTURES / "qwen25math_math_samples" / "math_cot.sample.jsonl"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def campaign():
    return make_campaign(slug="first-look")


@pytest.fixture
def manager_client(client, campaign):
    client.force_login(make_member(campaign=campaign, role="manager").user)
    return client


def upload(client, campaign, content: bytes, fmt: str, name: str = "file.jsonl"):
    data = {"format": fmt, "grade": "on", "file": SimpleUploadedFile(name, content)}
    return client.post(reverse("imports:list", kwargs={"slug": campaign.slug}), data)


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_each_sample_is_recognised_by_its_first_record(fmt):
    assert sniff([SAMPLES[fmt].read_bytes()]).format == fmt


def test_qwen_samples_are_plain_jsonl():
    assert guess_format(json.loads(QWEN.open().readline())) == "jsonl"


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_guess_from_the_first_record_imports_with_the_guessed_format(manager_client, campaign, fmt):
    response = upload(manager_client, campaign, SAMPLES[fmt].read_bytes(), "auto")

    assert response.status_code == 302
    assert ImportJob.objects.get().format == fmt


def test_a_wrong_choice_says_which_format_the_file_looks_like(manager_client, campaign):
    response = upload(manager_client, campaign, SAMPLES["prm800k"].read_bytes(), "jsonl")

    assert response.status_code == 400
    page = response.content.decode()
    assert "You chose jsonl (problems with solutions), but the file&#x27;s first record" in page
    assert "looks like prm800k (PRM800K label lines)" in page
    assert not ImportJob.objects.exists()


def test_a_first_record_of_no_known_shape_does_not_block_the_chosen_format(
    manager_client, campaign
):
    response = upload(manager_client, campaign, b'{"something": "else"}\n', "jsonl")

    assert response.status_code == 302  # the importer names what is missing, line by line
    assert ImportJob.objects.get().format == "jsonl"


def test_nothing_to_guess_from_asks_for_a_choice(manager_client, campaign):
    response = upload(manager_client, campaign, b'{"something": "else"}\n', "auto")

    assert response.status_code == 400
    assert "could not be guessed" in response.content.decode()


def test_a_latin1_file_gets_one_message_with_where(manager_client, campaign):
    lines = [json.dumps({"problem": "x", "solutions": []}).encode() for _ in range(5)]
    lines.insert(3, '{"problem": "café", "solutions": []}'.encode("latin-1"))
    response = upload(manager_client, campaign, b"\n".join(lines) + b"\n", "jsonl")

    page = response.content.decode()
    assert response.status_code == 400
    assert page.count("not UTF-8 text") == 1
    assert "on line 4" in page
    assert not ImportJob.objects.exists()


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"PK\x03\x04" + b"\x00" * 100, "This file is a zip archive"),
        (b"\x1f\x8b\x08\x00" + bytes(range(256)), "This file is a gzip archive"),
        (b'{"a": 1}\n\x00\x01\x02binary', "This file is binary"),
    ],
)
def test_a_binary_file_gets_one_clear_message(manager_client, campaign, content, said):
    response = upload(manager_client, campaign, content, "auto", name="data.xlsx")

    page = response.content.decode()
    assert response.status_code == 400
    assert said in page and page.count("not JSON Lines text") == 1
    assert not ImportJob.objects.exists()


def test_the_api_takes_the_same_first_look(campaign):
    from tests.factories import api_client_for

    api = api_client_for(make_member(campaign=campaign, role="manager").user)
    url = reverse("api-imports", kwargs={"slug": campaign.slug})
    response = api.post(
        url,
        {"format": "processbench", "file": SimpleUploadedFile("x.jsonl", b"\xff\xfe{}\n")},
        format="multipart",
    )

    assert response.status_code == 400
    assert "not UTF-8 text" in json.dumps(response.json())

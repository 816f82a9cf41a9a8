"""``Idempotency-Key`` on the API's job-creating POSTs (common.api.idempotent_job): the same key
sent again gets the job the first request created, not a second one."""

from __future__ import annotations

import pytest

from exports.models import Export
from imports.models import ImportJob
from labeling.models import Membership
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_token

pytestmark = pytest.mark.django_db

GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="keyed")
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, -1])
    return campaign


def _manager(campaign) -> str:
    return make_token(user=make_member(campaign=campaign, role=Membership.Role.MANAGER).user)


def _export(client, token: str, key: str | None):
    headers = {"HTTP_AUTHORIZATION": f"Token {token}"}
    if key is not None:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(
        "/api/campaigns/keyed/exports/",
        {"format": "trl"},
        content_type="application/json",
        **headers,
    )


def test_the_same_key_gets_the_same_export_and_another_key_a_new_one(client, campaign):
    token = _manager(campaign)
    first = _export(client, token, "export-2026-12-02-a")
    again = _export(client, token, "export-2026-12-02-a")
    other = _export(client, token, "export-2026-12-02-b")

    assert first.status_code == again.status_code == other.status_code == 202
    assert first.json()["id"] == again.json()["id"] != other.json()["id"]
    assert Export.objects.filter(campaign=campaign).count() == 2


def test_without_a_key_each_post_creates_and_keys_are_per_user(client, campaign):
    token, colleague = _manager(campaign), _manager(campaign)
    _export(client, token, None)
    _export(client, token, None)
    mine = _export(client, token, "k1").json()["id"]
    theirs = _export(client, colleague, "k1").json()["id"]
    assert mine != theirs
    assert Export.objects.filter(campaign=campaign).count() == 4


def test_an_upload_sent_twice_with_its_key_is_one_import(client, campaign):
    token = _manager(campaign)
    ids = []
    for _ in range(2):
        with open(GSM8K, "rb") as fh:
            response = client.post(
                "/api/campaigns/keyed/imports/",
                {"format": "jsonl", "grade": "false", "file": fh},
                HTTP_AUTHORIZATION=f"Token {token}",
                HTTP_IDEMPOTENCY_KEY="upload-1",
            )
        assert response.status_code == 202, response.content
        ids.append(response.json()["id"])
    assert ids[0] == ids[1]
    assert ImportJob.objects.filter(campaign=campaign).count() == 1


def test_a_refused_request_records_nothing_and_a_bad_key_is_a_400(client, campaign):
    token = _manager(campaign)
    refused = client.post(
        "/api/campaigns/keyed/exports/",
        {"format": "nope"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
        HTTP_IDEMPOTENCY_KEY="k2",
    )
    assert refused.status_code == 400
    assert _export(client, token, "k2").status_code == 202  # the key was not used up
    bad = _export(client, token, "has spaces in it")
    assert bad.status_code == 400
    assert "Idempotency-Key" in bad.json()
    assert Export.objects.filter(campaign=campaign).count() == 1

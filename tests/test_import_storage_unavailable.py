"""An upload into a media folder that cannot be written is a clear error, not a bare 500 (issue
41; exports and runs already failed cleanly in the same state): the page says the server could
not store it (503), the API answers ``503 {"code": "storage_unavailable"}``, neither names a
server path, and no import job is left behind."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from imports.models import ImportJob
from labeling.models import Membership
from tests.conftest import FIXTURES
from tests.factories import api_client_for, make_campaign, make_member

pytestmark = pytest.mark.django_db

GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"


@pytest.fixture
def blocked_media(settings, tmp_path):
    """A media root whose ``imports/`` is a file: nothing can be stored under it."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    (settings.MEDIA_ROOT / "imports").write_text("not a folder")
    settings.STORAGES = {**settings.STORAGES}  # a fresh default storage for the new root
    return settings.MEDIA_ROOT


def _file() -> SimpleUploadedFile:
    return SimpleUploadedFile("gsm8k.jsonl", GSM8K.read_bytes())


def test_the_upload_page_says_the_server_could_not_store_it(client, blocked_media):
    campaign = make_campaign(slug="blocked")
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    response = client.post(
        reverse("imports:list", kwargs={"slug": campaign.slug}),
        {"format": "jsonl", "grade": "on", "file": _file()},
    )
    assert response.status_code == 503
    text = response.content.decode()
    assert "The server could not store the upload" in text
    assert str(blocked_media) not in text
    assert not ImportJob.objects.filter(campaign=campaign).exists()


def test_the_api_answers_503_storage_unavailable(blocked_media):
    campaign = make_campaign(slug="blocked-api")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    response = api_client_for(manager).post(
        f"/api/campaigns/{campaign.slug}/imports/",
        {"format": "jsonl", "grade": "false", "file": _file()},
        format="multipart",
    )
    assert response.status_code == 503, response.content
    assert response.json()["code"] == "storage_unavailable"
    assert str(blocked_media) not in response.content.decode()
    assert not ImportJob.objects.filter(campaign=campaign).exists()

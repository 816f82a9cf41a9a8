"""A failed import can be deleted from the imports page: managers only, POST with CSRF, failed
jobs only (a done one is the record of what was imported)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from imports.models import ImportJob
from tests.factories import make_campaign, make_member

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def campaign():
    return make_campaign(slug="delete-imports")


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role="manager").user


def failed_job(campaign, **fields):
    job = ImportJob.objects.create(
        campaign=campaign,
        file_name="broken.jsonl",
        format="jsonl",
        status="failed",
        errors=[{"file": "broken.jsonl", "line": 2, "field": "", "message": "not valid JSON"}],
        **fields,
    )
    return job


def delete_url(job):
    return reverse("imports:delete", kwargs={"slug": job.campaign.slug, "pk": job.pk})


def test_the_page_offers_a_delete_button_for_a_failed_import(client, campaign, manager):
    job = failed_job(campaign)
    client.force_login(manager)

    page = client.get(reverse("imports:list", kwargs={"slug": campaign.slug})).content.decode()

    assert f'action="{delete_url(job)}"' in page
    assert "Delete this failed import" in page
    assert page.count("csrfmiddlewaretoken") >= 2


def test_a_manager_deletes_a_failed_import_and_its_leftover_file(client, campaign, manager):
    job = failed_job(campaign, stored_path="imports/99/broken.jsonl")
    job.path.parent.mkdir(parents=True)
    job.path.write_text("not json\n")
    client.force_login(manager)

    response = client.post(delete_url(job), follow=True)

    assert response.status_code == 200
    assert "Failed import" in response.content.decode() and "deleted" in response.content.decode()
    assert not ImportJob.objects.exists()
    assert not job.path.parent.exists()


@pytest.mark.parametrize("status", ["done", "pending", "running"])
def test_only_a_failed_import_can_be_deleted(client, campaign, manager, status):
    job = ImportJob.objects.create(
        campaign=campaign, file_name="x.jsonl", format="jsonl", status=status
    )
    client.force_login(manager)

    response = client.post(delete_url(job), follow=True)

    assert "only a failed import can be deleted" in response.content.decode()
    assert ImportJob.objects.filter(pk=job.pk).exists()


def test_an_annotator_may_not_delete_and_a_get_does_nothing(client, campaign, manager):
    job = failed_job(campaign)
    client.force_login(make_member(campaign=campaign, role="annotator").user)
    assert client.post(delete_url(job)).status_code == 403
    client.force_login(manager)
    assert client.get(delete_url(job)).status_code == 405
    assert ImportJob.objects.filter(pk=job.pk).exists()


def test_deleting_needs_the_csrf_token(campaign, manager):
    job = failed_job(campaign)
    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)

    assert client.post(delete_url(job)).status_code == 403
    assert ImportJob.objects.filter(pk=job.pk).exists()

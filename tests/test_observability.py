"""Liveness, readiness and metrics (stepwise/observability.py): what each answers, who may read
the figures, and that the figures are the database's and the broker's."""

from __future__ import annotations

import pytest
from django.urls import reverse

from exports.models import Export
from labeling.models import Membership
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


def test_healthz_answers_ok_to_anyone(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_names_the_part_that_failed_and_only_staff_see_why(client):
    # The database, the broker and the storage work here; no worker runs in this test.
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready"
    assert body["failed"] == ["workers"]
    assert body["checks"]["database"] == body["checks"]["broker"] == "ok"
    assert body["checks"]["storage"] == "ok"
    assert "errors" not in body  # anonymous: which part, not why

    client.force_login(make_user(is_staff=True))
    body = client.get("/readyz").json()
    assert body["errors"]["workers"] == "LookupError: no worker consumes celery, learning, long"


def test_readyz_fails_the_storage_when_media_cannot_be_written(client, settings, tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the media folder should be")
    settings.MEDIA_ROOT = blocked
    settings.STORAGES = {**settings.STORAGES}  # a fresh default storage for the new root
    body = client.get("/readyz").json()
    assert "storage" in body["failed"]
    assert str(blocked) not in str(body)  # no server path to anonymous callers


def test_metrics_are_for_staff_and_the_token_only(client, settings):
    settings.STEPWISE_METRICS_TOKEN = "s3cret-token"
    campaign = make_campaign()
    annotator = make_member(campaign=campaign, role=Membership.Role.MANAGER).user

    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 404
    client.force_login(annotator)  # a campaign manager is not the site's operator
    assert client.get("/metrics").status_code == 404
    client.logout()
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token").status_code == 200
    client.force_login(make_user(is_staff=True))
    assert client.get("/metrics").status_code == 200


def test_metrics_without_a_token_setting_refuse_any_bearer(client, settings):
    settings.STEPWISE_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_metrics_count_jobs_queues_labels_and_time_requests_by_view(client):
    campaign = make_campaign()
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, 1, -1])
    Export.objects.create(campaign=campaign, format="trl")  # waiting; no worker on `learning`
    Export.objects.create(campaign=campaign, format="trl", status="done")
    client.force_login(make_user(is_staff=True))
    client.get(reverse("healthz"))

    text = client.get("/metrics").content.decode()

    assert 'stepwise_jobs{kind="exports",state="pending"} 1.0' in text
    assert 'stepwise_jobs{kind="exports",state="done"} 1.0' in text
    assert 'stepwise_jobs{kind="imports",state="pending"} 0.0' in text
    assert 'stepwise_job_oldest_seconds{kind="exports",state="pending"}' in text
    assert 'stepwise_jobs_unconsumed{kind="exports",queue="learning"} 1.0' in text
    for queue in ("celery", "learning", "long"):
        assert f'stepwise_queue_consumers{{queue="{queue}"}} 0.0' in text
        assert f'stepwise_queue_depth{{queue="{queue}"}}' in text
    assert "stepwise_step_labels_last_minute 3.0" in text
    assert 'stepwise_request_seconds_count{method="GET",status="2xx",view="healthz"}' in text

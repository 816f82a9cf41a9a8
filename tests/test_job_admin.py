"""The admin's actions on jobs (common/admin.py, common.job_recovery.job_retry / job_fail): an
operator retries a failed job from scratch, or fails a stuck one, whose worker then stops."""

from __future__ import annotations

import pytest
from django.urls import reverse

from common.jobs import JobAttempt, JobSuperseded, job_kinds
from exports.models import Export
from imports.models import ImportJob
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(make_user(username="ops", is_staff=True, is_superuser=True))
    return client


def _act(client, model, action: str, *pks: int):
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    return client.post(
        url, {"action": action, "_selected_action": [str(pk) for pk in pks]}, follow=True
    )


def test_retry_sends_a_failed_job_again_with_all_its_attempts(
    admin_client, django_capture_on_commit_callbacks
):
    campaign = make_campaign()
    failed = Export.objects.create(
        campaign=campaign, format="trl", status="failed", attempts=3, error="gave up"
    )
    done = Export.objects.create(campaign=campaign, format="trl", status="done")

    with django_capture_on_commit_callbacks() as sent:
        page = _act(admin_client, Export, "retry_jobs", failed.pk, done.pk).content.decode()

    failed.refresh_from_db()
    done.refresh_from_db()
    assert (failed.status, failed.attempts, failed.error, failed.finished_at) == (
        "pending",
        0,
        "",
        None,
    )
    assert done.status == "done"
    assert len(sent) == 1  # the failed one's task, once
    assert "1 job(s) sent again." in page
    assert f"#{done.pk} (not failed)" in page


def test_fail_ends_a_running_job_and_its_worker_stops_at_its_next_write(admin_client):
    campaign = make_campaign()
    job = ImportJob.objects.create(
        campaign=campaign, file_name="x.jsonl", format="jsonl", status="running", attempts=1
    )
    attempt = JobAttempt(job_kinds()["imports"], job.pk, 1)

    page = _act(admin_client, ImportJob, "fail_jobs", job.pk).content.decode()

    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error == "failed by ops from the admin"
    assert job.finished_at is not None
    assert "1 job(s) failed." in page
    with pytest.raises(JobSuperseded):
        attempt.update(progress=0.5)


def test_only_staff_reach_the_actions(client):
    job = Export.objects.create(campaign=make_campaign(), format="trl", status="failed")
    client.force_login(make_user())
    response = _act(client, Export, "retry_jobs", job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert response.redirect_chain and "login" in response.redirect_chain[0][0]


def test_every_kind_of_job_has_the_actions_in_the_admin():
    from django.contrib import admin

    from common.admin import fail_jobs, retry_jobs

    for name, kind in job_kinds().items():
        model_admin = admin.site._registry.get(kind.model)
        assert model_admin is not None, f"{name}: {kind.model.__name__} is not in the admin"
        assert {retry_jobs, fail_jobs} <= set(model_admin.actions), name


def test_each_kinds_admin_list_shows(admin_client):
    for kind in job_kinds().values():
        meta = kind.model._meta
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        assert admin_client.get(url).status_code == 200, kind.name

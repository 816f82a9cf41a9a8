"""Generation from the page and the API: managers only, checked input, the key never shown."""

from __future__ import annotations

import pytest
from django.urls import reverse

from imports.models import GenerationJob
from tests.factories import api_client_for, make_campaign, make_member, make_problem

pytestmark = pytest.mark.django_db

SECRET = "sk-never-shown-4f2a"


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="gen")
    make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    return campaign


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role="manager").user


def _form(**fields) -> dict:
    return {
        "base_url": "http://localhost:8000/v1",
        "model": "Qwen/Qwen2.5-Math-1.5B-Instruct",
        "api_key_env": "STEPWISE_GENERATION_API_KEY",
        "samples_per_problem": "4",
        "selection": "all",
        "prompt_template": "Solve: {problem}",
        "temperature": "0.8",
        "top_p": "0.95",
        "max_tokens": "512",
        "split": "auto",
        "concurrency": "4",
        "timeout_s": "60",
        "max_retries": "3",
        "grade": "on",
    } | fields


def test_a_manager_queues_a_job_from_the_page_and_sees_it(
    client, campaign, manager, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setenv("STEPWISE_GENERATION_API_KEY", SECRET)
    client.force_login(manager)
    url = reverse("imports:generations", kwargs={"slug": campaign.slug})
    page = client.get(url)
    assert page.status_code == 200
    assert "# Answer" in page.content.decode()  # PRM800K's prompt by default
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(url, _form())
    assert response.status_code == 302
    assert len(queued) == 1
    job = GenerationJob.objects.get()
    assert (job.model, job.samples_per_problem, job.temperature, job.top_p) == (
        "Qwen/Qwen2.5-Math-1.5B-Instruct",
        4,
        0.8,
        0.95,
    )
    assert (job.api_key_env, job.created_by, job.status) == (
        "STEPWISE_GENERATION_API_KEY",
        manager,
        "pending",
    )
    html = client.get(url).content.decode()
    assert "Qwen/Qwen2.5-Math-1.5B-Instruct" in html and SECRET not in html
    # The next job starts from the campaign's template.
    assert "Solve: {problem}" in html


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"base_url": "file:///etc/passwd"}, "http:// or https://"),
        ({"prompt_template": "no placeholder"}, "{problem}"),
        ({"split": "("}, "regular expression"),
        ({"api_key_env": "SECRET_KEY"}, "Select a valid choice"),
    ],
)
def test_the_page_refuses_a_bad_request_with_its_reason(client, campaign, manager, fields, message):
    client.force_login(manager)
    url = reverse("imports:generations", kwargs={"slug": campaign.slug})
    response = client.post(url, _form(**fields))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not GenerationJob.objects.exists()


def test_the_api_creates_lists_and_shows_jobs_for_managers(
    campaign, manager, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setenv("STEPWISE_GENERATION_API_KEY", SECRET)
    api = api_client_for(manager)
    url = f"/api/campaigns/{campaign.slug}/generations/"
    body = {
        "base_url": "https://api.example.com/v1",
        "model": "gpt-x",
        "api_key_env": "STEPWISE_GENERATION_API_KEY",
        "samples_per_problem": 8,
        "selection": "fewer_than_k",
    }
    with django_capture_on_commit_callbacks() as queued:
        created = api.post(url, body, format="json")
    assert created.status_code == 202, created.content
    assert len(queued) == 1
    job = created.json()
    assert (job["model"], job["samples_per_problem"], job["status"]) == ("gpt-x", 8, "pending")
    assert job["prompt_template"] == GenerationJob._meta.get_field("prompt_template").default
    listed = api.get(url).json()
    assert [j["id"] for j in listed["results"]] == [job["id"]]
    shown = api.get(f"{url}{job['id']}/")
    assert shown.status_code == 200
    everything = created.content + api.get(url).content + shown.content
    assert SECRET.encode() not in everything

    refused = api.post(f"{url}{job['id']}/resume/")
    assert refused.status_code == 409  # still pending


def test_the_api_refuses_an_endpoint_that_is_not_http(campaign, manager):
    api = api_client_for(manager)
    response = api.post(
        f"/api/campaigns/{campaign.slug}/generations/",
        {"base_url": "file:///etc/passwd", "model": "m"},
        format="json",
    )
    assert response.status_code == 400
    assert "http" in response.content.decode()
    assert not GenerationJob.objects.exists()


@pytest.mark.parametrize("role", ["annotator", "reviewer"])
def test_other_members_may_not_generate(campaign, role):
    api = api_client_for(make_member(campaign=campaign, role=role).user)
    response = api.post(
        f"/api/campaigns/{campaign.slug}/generations/",
        {"base_url": "http://localhost:8000/v1", "model": "m"},
        format="json",
    )
    assert response.status_code == 403
    assert not GenerationJob.objects.exists()


def test_a_failed_job_can_be_resumed_from_the_page(
    client, campaign, manager, django_capture_on_commit_callbacks
):
    job = GenerationJob.objects.create(
        campaign=campaign, base_url="http://localhost:8000/v1", model="m", status="failed"
    )
    client.force_login(manager)
    url = reverse("imports:generation-resume", kwargs={"slug": campaign.slug, "pk": job.pk})
    with django_capture_on_commit_callbacks() as queued:
        assert client.post(url).status_code == 302
    job.refresh_from_db()
    assert job.status == "pending" and len(queued) == 1


def test_the_job_row_is_polled_while_it_runs(client, campaign, manager):
    job = GenerationJob.objects.create(
        campaign=campaign,
        base_url="http://localhost:8000/v1",
        model="m",
        status="running",
        requested=10,
        completed=4,
        prompt_tokens=123,
    )
    client.force_login(manager)
    url = reverse(
        "labeling:job-status", kwargs={"slug": campaign.slug, "kind": "generation", "pk": job.pk}
    )
    html = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'hx-trigger="every 2s"' in html
    assert "4 of 10 samples" in html and "123 prompt" in html

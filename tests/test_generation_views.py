"""Generation from the page and the API: managers only, declared endpoints chosen by name,
checked input, the key and the endpoint's URL never shown."""

from __future__ import annotations

import pytest
from django.urls import reverse

from machines.models import GenerationJob
from tests.factories import api_client_for, make_campaign, make_member, make_problem

pytestmark = pytest.mark.django_db

SECRET = "sk-never-shown-4f2a"
GPU_URL = "http://gpu.internal:8000/v1"


@pytest.fixture(autouse=True)
def declared(settings):
    settings.STEPWISE_ENDPOINTS = [
        {
            "name": "gpu",
            "kind": "chat",
            "label": "Qwen on the GPU box",
            "base_url": GPU_URL,
            "models": ["Qwen/Qwen2.5-Math-1.5B-Instruct", "Qwen/Qwen2.5-Math-7B-Instruct"],
            "key_env": "STEPWISE_GENERATION_API_KEY",
            "timeout_s": 300,
        },
        {
            "name": "hosted",
            "kind": "chat",
            "base_url": "https://api.example.com/v1",
            "models": ["gpt-x"],
            "key_env": "OPENAI_API_KEY",
            "max_concurrency": 8,
        },
        {"name": "prm", "kind": "pooling", "base_url": "http://gpu.internal:8001", "models": ["p"]},
    ]


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
        "model": "gpu:Qwen/Qwen2.5-Math-1.5B-Instruct",
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
    url = reverse("machines:generations", kwargs={"slug": campaign.slug})
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "# Answer" in html  # PRM800K's prompt by default
    # The declared chat endpoints and their models are offered, by name; never their URLs.
    assert 'optgroup label="Qwen on the GPU box (gpu)"' in html
    assert 'value="gpu:Qwen/Qwen2.5-Math-7B-Instruct"' in html and 'value="hosted:gpt-x"' in html
    assert GPU_URL not in html and "gpu.internal" not in html
    assert 'name="base_url"' not in html  # free-form URLs are off
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
    assert (job.endpoint, job.base_url, job.created_by, job.status) == (
        "gpu",
        "",
        manager,
        "pending",
    )
    html = client.get(url).content.decode()
    assert "Qwen/Qwen2.5-Math-1.5B-Instruct" in html and SECRET not in html
    assert GPU_URL not in html
    # The next job starts from the campaign's template.
    assert "Solve: {problem}" in html


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model": "gpu:gpt-x"}, "Select a valid choice"),
        ({"model": "prm:p"}, "Select a valid choice"),
        ({"prompt_template": "no placeholder"}, "{problem}"),
        ({"split": "("}, "regular expression"),
        ({"split": r"(?<=\.)\s"}, "no lookaround"),
        ({"timeout_s": "301"}, "timeout_s must be 1-300 s"),
        ({"concurrency": "99999999999999999999"}, "less than or equal to 16"),
        ({"samples_per_problem": "1e400"}, "Enter a whole number"),
    ],
)
def test_the_page_refuses_a_bad_request_with_its_reason(client, campaign, manager, fields, message):
    client.force_login(manager)
    url = reverse("machines:generations", kwargs={"slug": campaign.slug})
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
    body = {"endpoint": "hosted", "samples_per_problem": 8, "selection": "fewer_than_k"}
    with django_capture_on_commit_callbacks() as queued:
        created = api.post(url, body, format="json")
    assert created.status_code == 202, created.content
    assert len(queued) == 1
    job = created.json()
    assert (job["endpoint"], job["base_url"], job["model"]) == ("hosted", "", "gpt-x")
    assert (job["samples_per_problem"], job["status"]) == (8, "pending")
    assert job["prompt_template"] == GenerationJob._meta.get_field("prompt_template").default
    listed = api.get(url).json()
    assert [j["id"] for j in listed["results"]] == [job["id"]]
    shown = api.get(f"{url}{job['id']}/")
    assert shown.status_code == 200
    everything = created.content + api.get(url).content + shown.content
    assert SECRET.encode() not in everything and b"api.example.com" not in everything

    refused = api.post(f"{url}{job['id']}/resume/")
    assert refused.status_code == 409  # still pending


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"base_url": "file:///etc/passwd", "model": "m"}, "base_url", "choose one by name"),
        ({"base_url": "http://127.0.0.1:6379/v1", "model": "m"}, "base_url", "choose one by name"),
        ({"endpoint": "prm"}, "endpoint", "the endpoints are: gpu, hosted"),
        ({"endpoint": "gpu", "model": "gpt-x"}, "model", "serves Qwen"),
        ({"endpoint": "hosted", "concurrency": 9}, "concurrency", "between 1 and 8"),
        ({"endpoint": "hosted", "split": "(a)\\1"}, "split", "no backreferences"),
        ({"endpoint": "hosted", "samples_per_problem": 10**20}, "samples_per_problem", "less"),
        ({}, "endpoint", "Choose the endpoint"),
    ],
)
def test_the_api_refuses_a_bad_request_naming_the_field(campaign, manager, body, field, message):
    api = api_client_for(manager)
    response = api.post(f"/api/campaigns/{campaign.slug}/generations/", body, format="json")
    assert response.status_code == 400
    assert message in " ".join(response.json()[field])
    assert not GenerationJob.objects.exists()


def test_the_api_lists_the_chat_endpoints_and_their_models_without_urls(campaign, manager):
    api = api_client_for(manager)
    response = api.get(f"/api/campaigns/{campaign.slug}/generations/endpoints/")
    assert response.status_code == 200
    assert response.json() == [
        {
            "name": "gpu",
            "label": "Qwen on the GPU box",
            "models": ["Qwen/Qwen2.5-Math-1.5B-Instruct", "Qwen/Qwen2.5-Math-7B-Instruct"],
            "timeout_s": 300.0,
            "max_concurrency": 16,
        },
        {
            "name": "hosted",
            "label": "hosted",
            "models": ["gpt-x"],
            "timeout_s": 120.0,
            "max_concurrency": 8,
        },
    ]
    assert b"gpu.internal" not in response.content


def test_with_free_form_urls_on_the_page_takes_a_url_to_a_listed_host(
    client, campaign, manager, settings
):
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["127.0.0.1/32"]
    client.force_login(manager)
    url = reverse("machines:generations", kwargs={"slug": campaign.slug})
    assert 'name="base_url"' in client.get(url).content.decode()
    fields = {"model": "url:", "base_url": "http://127.0.0.1:9/v1", "url_model": "mine"}
    assert client.post(url, _form(**fields)).status_code == 302
    job = GenerationJob.objects.get()
    assert (job.endpoint, job.base_url, job.model) == ("", "http://127.0.0.1:9/v1", "mine")
    refused = client.post(url, _form(**(fields | {"base_url": "http://[::1]:6379/v1"})))
    assert refused.status_code == 400
    assert "STEPWISE_ENDPOINT_HOSTS" in refused.content.decode()


def test_the_form_starts_from_the_last_jobs_endpoint_and_model(client, campaign, manager, settings):
    client.force_login(manager)
    url = reverse("machines:generations", kwargs={"slug": campaign.slug})
    assert "selected" not in _model_select(client.get(url))  # no job yet: nothing chosen
    assert client.post(url, _form(model="hosted:gpt-x")).status_code == 302
    assert '<option value="hosted:gpt-x" selected>' in _model_select(client.get(url))
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["127.0.0.1/32"]
    fields = {"model": "url:", "base_url": "http://127.0.0.1:9/v1", "url_model": "mine"}
    assert client.post(url, _form(**fields)).status_code == 302
    html = client.get(url).content.decode()
    assert '<option value="url:" selected>' in _model_select(html)
    assert 'value="http://127.0.0.1:9/v1"' in html and 'value="mine"' in html


def _model_select(page) -> str:
    html = page if isinstance(page, str) else page.content.decode()
    start = html.index('<select name="model"')
    return html[start : html.index("</select>", start)]


@pytest.mark.parametrize(
    ("status", "offered"), [("running", False), ("pending", False), ("failed", True)]
)
def test_only_a_finished_job_with_samples_missing_offers_resume(
    client, campaign, manager, status, offered
):
    job = GenerationJob.objects.create(
        campaign=campaign, endpoint="gpu", model="m", status=status, requested=8
    )
    client.force_login(manager)
    html = client.get(reverse("machines:generations", kwargs={"slug": campaign.slug})).content
    resume = reverse("machines:generation-resume", kwargs={"slug": campaign.slug, "pk": job.pk})
    assert (resume in html.decode()) is offered


@pytest.mark.parametrize("role", ["annotator", "reviewer"])
def test_other_members_may_not_generate(campaign, role):
    api = api_client_for(make_member(campaign=campaign, role=role).user)
    response = api.post(
        f"/api/campaigns/{campaign.slug}/generations/",
        {"endpoint": "gpu"},
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
    url = reverse("machines:generation-resume", kwargs={"slug": campaign.slug, "pk": job.pk})
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

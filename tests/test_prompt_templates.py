"""Prompt templates are data (``machines.prompts``): named fields only, no format spec, no
attribute or index access, a bound on the size; a bad one is a 400 naming the problem, and
checking one allocates nothing that the template asks for (tracemalloc's peak, not time)."""

from __future__ import annotations

import tracemalloc

import pytest
from django.urls import reverse

from machines.generation import generation_job_run
from machines.models import GenerationJob
from machines.prompts import (
    MAX_PLACEHOLDERS,
    MAX_PROMPT_CHARS,
    MAX_TEMPLATE_CHARS,
    PromptTemplate,
    TemplateError,
)
from tests.factories import api_client_for, make_campaign, make_member, make_problem
from tests.generation_servers import StubServer

WIDE = "{problem:>500000000}"  # what made one web process grow by 729 MB
ATTRIBUTE = "{problem.__len__.__self__.__class__}"
MB = 1024 * 1024


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (WIDE, "{problem:>500000000}: placeholders take no format or conversion"),
        ("{problem!r}", "take no format or conversion"),
        ("{problem:{answer}}", "take no format or conversion"),
        (ATTRIBUTE, "attribute and index access are not allowed"),
        ("{problem.foo}", "attribute and index access are not allowed"),
        ("{problem[0]}", "attribute and index access are not allowed"),
        ("{problem} {0}", "{0} (unknown field)"),
        ("{problem} {}", "{} (an empty placeholder)"),
        ("{problem} {secret_key}", "unknown field); the fields are {problem}, {answer}"),
        ("Answer: {answer}", "must contain {problem}"),
        ("{problem} {", "braces do not pair up"),
        ("{problem} }", "braces do not pair up"),
        ("{problem}" * (MAX_PLACEHOLDERS + 1), f"at most {MAX_PLACEHOLDERS}"),
        ("{problem}" + "x" * MAX_TEMPLATE_CHARS, "longer than 20,000 characters"),
        ("   ", "is empty"),
    ],
)
def test_a_bad_template_is_refused_naming_the_problem(template, message):
    with pytest.raises(TemplateError) as refused:
        PromptTemplate.parse(template)
    assert message in str(refused.value)


def test_the_named_fields_are_filled_and_literal_braces_kept():
    template = PromptTemplate.parse("{{JSON}}: {problem} | {answer} | {subject} {level}")
    values = {"problem": "1+1?", "answer": "2", "subject": "Algebra", "level": "1"}
    assert template.render(values) == "{JSON}: 1+1? | 2 | Algebra 1"


def test_a_prompt_past_the_bound_is_refused_before_it_is_built():
    template = PromptTemplate.parse("{problem}" * MAX_PLACEHOLDERS)
    problem = "x" * (MAX_PROMPT_CHARS // MAX_PLACEHOLDERS + 1)
    tracemalloc.start()
    try:
        with pytest.raises(TemplateError, match="more than 200,000"):
            template.render({"problem": problem})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MB  # the 200,020-character prompt was never joined


@pytest.fixture
def campaign(settings):
    settings.STEPWISE_ENDPOINTS = [
        {"name": "gpu", "kind": "chat", "base_url": "http://gpu.internal/v1", "models": ["m"]}
    ]
    campaign = make_campaign(slug="prompts")
    make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    return campaign


def _peak_during(call) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.django_db
@pytest.mark.parametrize("template", [WIDE, ATTRIBUTE, "{problem.foo}"])
def test_the_page_answers_400_and_memory_stays_flat(client, campaign, template):
    client.force_login(make_member(campaign=campaign, role="manager").user)
    url = reverse("machines:generations", kwargs={"slug": campaign.slug})
    form = {
        "model": "gpu:m",
        "samples_per_problem": "1",
        "selection": "all",
        "prompt_template": template,
        "temperature": "1",
        "top_p": "1",
        "max_tokens": "16",
        "split": "auto",
        "concurrency": "1",
        "max_retries": "0",
    }
    client.get(url)  # templates compiled, caches warm: the peak below is the request's own
    response, peak = _peak_during(lambda: client.post(url, form))
    assert response.status_code == 400
    assert "placeholders take no format" in response.content.decode() or (
        "attribute and index access are not allowed" in response.content.decode()
    )
    assert peak < 20 * MB  # 500,000,000 characters would be 500 MB at least
    assert not GenerationJob.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("template", [WIDE, ATTRIBUTE, "{problem.foo}"])
def test_the_api_answers_400_naming_the_field_and_memory_stays_flat(campaign, template):
    api = api_client_for(make_member(campaign=campaign, role="manager").user)
    url = f"/api/campaigns/{campaign.slug}/generations/"
    api.get(url)
    body = {"endpoint": "gpu", "prompt_template": template}
    response, peak = _peak_during(lambda: api.post(url, body, format="json"))
    assert response.status_code == 400
    assert "The prompt template has" in response.json()["prompt_template"][0]
    assert peak < 20 * MB
    assert not GenerationJob.objects.exists()


@pytest.mark.django_db
def test_a_stored_template_from_before_fails_its_job_asking_nothing(campaign, settings):
    """A job saved before templates were checked this way (here: written straight to the
    table) fails with the reason when it runs, and the endpoint is never asked."""
    with StubServer() as server:
        settings.STEPWISE_ENDPOINTS = [
            {"name": "gpu", "kind": "chat", "base_url": server.base_url, "models": ["m"]}
        ]
        job = GenerationJob.objects.create(
            campaign=campaign, endpoint="gpu", model="m", prompt_template=WIDE
        )
        job = generation_job_run(job=job)
        assert server.script.requests == []
    assert job.status == "failed"
    assert "placeholders take no format" in job.errors[-1]["message"]

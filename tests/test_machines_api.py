"""The machines' API beside generation's: machine evidence and scoring jobs (list, create,
detail), every job's ``state`` in words (a waiting job names its queue and says when no worker
consumes it), and a failed job's reason in ``error``. Jobs run in the test's process, against
real local servers."""

from __future__ import annotations

import pytest

from labeling.models import Membership
from machines.evidence import evidence_job_run
from machines.models import EvidenceJob, ScoringJob
from machines.served import scoring_job_run
from tests.factories import (
    api_client_for,
    make_campaign,
    make_member,
    make_problem,
    make_solution,
)
from tests.generation_servers import Script, StubServer
from tests.pooling_server import PoolingServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="api")
    problem = make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    make_solution(campaign=campaign, problem=problem, steps=["1 + 1 = 2.", "# Answer\n\n2"])
    return campaign


@pytest.fixture
def api(campaign):
    return api_client_for(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)


def declare(settings, url: str, kind: str = "chat") -> None:
    settings.STEPWISE_ENDPOINTS = [{"name": "box", "kind": kind, "base_url": url, "models": ["m"]}]
    settings.STEPWISE_GENERATION_BACKOFF_MS = 1
    settings.STEPWISE_SCORING_BACKOFF_MS = 1


def test_a_waiting_job_names_its_queue_and_says_no_worker_consumes_it(settings, campaign, api):
    declare(settings, "http://127.0.0.1:9/v1")
    made = api.post(
        "/api/campaigns/api/generations/",
        {"endpoint": "box", "samples_per_problem": 1},
        format="json",
    )
    assert made.status_code == 202, made.json()
    assert made.json()["status"] == "pending"
    assert made.json()["state"].startswith("waiting for a worker on queue long")
    # No worker runs in this test: the broker is asked, and no worker says it takes "long".
    detail = api.get(f"/api/campaigns/api/generations/{made.json()['id']}/").json()
    assert detail["state"] == (
        "waiting for a worker on queue long (no worker consumes it: start one with -Q long)"
    )


def test_evidence_jobs_are_created_listed_and_shown_with_their_reason(settings, campaign, api):
    solution = campaign.solutions.get()
    with StubServer(Script(reply=lambda body: "The first error is \\boxed{-1}.")) as server:
        declare(settings, server.base_url)
        refused = api.post("/api/campaigns/api/evidence/", {"kind": "nope"}, format="json")
        assert refused.status_code == 400 and "kind" in refused.json()
        made = api.post(
            "/api/campaigns/api/evidence/",
            {"kind": "judge", "endpoint": "box", "selection": {"id": [solution.pk]}},
            format="json",
        )
        assert made.status_code == 202, made.json()
        assert made.json()["state"].startswith("waiting for a worker on queue long")
        job = evidence_job_run(job=EvidenceJob.objects.get(pk=made.json()["id"]))
    assert job.status == "done"
    listed = api.get("/api/campaigns/api/evidence/").json()["results"]
    assert [j["id"] for j in listed] == [job.pk]
    shown = api.get(f"/api/campaigns/api/evidence/{job.pk}/").json()
    assert (shown["status"], shown["state"], shown["completed"]) == ("done", "done", 1)


def test_a_failed_evidence_jobs_error_says_why(settings, campaign, api):
    solution = campaign.solutions.get()
    with StubServer(Script(statuses=[400] * 5, error_message="no such model")) as server:
        declare(settings, server.base_url)
        made = api.post(
            "/api/campaigns/api/evidence/",
            {"kind": "judge", "endpoint": "box", "selection": {"id": [solution.pk]}},
            format="json",
        )
        evidence_job_run(job=EvidenceJob.objects.get(pk=made.json()["id"]))
    shown = api.get(f"/api/campaigns/api/evidence/{made.json()['id']}/").json()
    assert shown["status"] == "failed"
    assert "box answered 400: no such model" in shown["error"]
    assert shown["errors"][-1]["message"] == "box answered 400: no such model"


def test_scoring_jobs_are_started_listed_and_shown(settings, campaign, api):
    refused = api.post("/api/campaigns/api/scoring/", format="json")
    assert refused.status_code == 400
    assert "scoring endpoint" in refused.json()["detail"][0]
    with PoolingServer() as server:
        declare(settings, server.url, kind="pooling")
        campaign.al_scoring_endpoint = "box"
        campaign.save(update_fields=["al_scoring_endpoint"])
        made = api.post("/api/campaigns/api/scoring/", format="json")
        assert made.status_code == 202, made.json()
        assert made.json()["state"].startswith("waiting for a worker on queue learning")
        job = scoring_job_run(job=ScoringJob.objects.get(pk=made.json()["id"]))
    assert job.status == "done"
    listed = api.get("/api/campaigns/api/scoring/").json()["results"]
    assert [j["id"] for j in listed] == [job.pk]
    shown = api.get(f"/api/campaigns/api/scoring/{job.pk}/").json()
    assert (shown["state"], shown["scored"], shown["total"]) == ("done", 1, 1)

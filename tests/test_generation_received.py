"""A resumed generation job does not ask the endpoint again for what an earlier attempt
received (``machines.ReceivedSample``): a sample that became no solution (a duplicate the import
path dropped) is not asked again. The kills half way are in ``tests/test_generation.py``."""

from __future__ import annotations

import pytest

from machines import generation
from machines.generation import generation_job_create, generation_job_run
from machines.models import ReceivedSample
from tests.factories import make_campaign, make_problem
from tests.generation_servers import Script, StubServer


@pytest.fixture(autouse=True)
def _declared(settings):
    settings.STEPWISE_GENERATION_BACKOFF_MS = 1


def _job(settings, campaign, base_url: str, **options):
    settings.STEPWISE_ENDPOINTS = [
        {"name": "box", "kind": "chat", "base_url": base_url, "models": ["stub"]}
    ]
    return generation_job_create(
        campaign=campaign, created_by=None, endpoint="box", enqueue=False, **options
    )


@pytest.mark.django_db
def test_a_resume_does_not_ask_again_for_a_sample_that_became_no_solution(settings):
    """Three identical answers make one solution (the import path drops duplicates); a resumed
    job asks the endpoint for none of them again."""
    campaign = make_campaign()
    make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    with StubServer(Script(reply=lambda body: "Same.\n\n# Answer\n\n2")) as server:
        job = generation_job_run(
            job=_job(settings, campaign, server.base_url, samples_per_problem=3)
        )
        assert (job.status, job.completed, job.solutions_created) == ("done", 3, 1)
        asked = len(server.script.requests)
        job = generation.generation_job_resume(job=job, enqueue=False)
        job = generation_job_run(job=job)
        assert len(server.script.requests) == asked == 3
    assert job.status == "done" and job.solutions_created == 1


@pytest.mark.django_db
def test_each_answered_sample_is_kept_and_marked_written_with_its_batch(settings):
    campaign = make_campaign()
    make_problem(campaign=campaign, text="What is $1+1$?", ground_truth_answer="2")
    with StubServer(Script(statuses=[400])) as server:  # the first sample is refused
        job = generation_job_run(
            job=_job(settings, campaign, server.base_url, samples_per_problem=3)
        )
    kept = ReceivedSample.objects.filter(job=job)
    assert kept.count() == 2  # the refused one was not received: a resume asks for it
    assert all(row.written and row.text for row in kept)
    assert job.completed == 2 and job.failed == 1

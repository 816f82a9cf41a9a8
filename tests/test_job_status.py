"""One status partial and one status view for every kind of job (labeling/job_views.py,
``{% job_status %}``), polled at one interval on every page that shows a job."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from annotators.models import CampaignSnapshot
from exports.models import Export
from imports.models import ImportJob
from labeling.models import Membership, SolutionBulkAction
from learning.models import ActiveLearningRun
from machines.models import GenerationJob
from tests.factories import make_campaign, make_member

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def campaign():
    return make_campaign(slug="jobs")


@pytest.fixture
def manager(client, campaign):
    user = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(user)
    return user


def _job(kind: str, campaign, status: str = "running"):
    if kind == "imports":
        return ImportJob.objects.create(
            campaign=campaign, file_name="x.jsonl", format="jsonl", status=status, progress=0.5
        )
    if kind == "generation":
        return GenerationJob.objects.create(
            campaign=campaign, base_url="http://localhost:8000/v1", model="m", status=status
        )
    if kind == "exports":
        return Export.objects.create(campaign=campaign, format="trl", status=status)
    if kind == "snapshots":
        return CampaignSnapshot.objects.create(campaign=campaign, status=status)
    if kind == "active_learning":
        return ActiveLearningRun.objects.create(campaign=campaign, status=status)
    return SolutionBulkAction.objects.create(
        campaign=campaign, action="archive", total=500, status=status
    )


# The page that shows each kind of job.
PAGES = {
    "imports": lambda c, job: reverse("imports:list", kwargs={"slug": c.slug}),
    "generation": lambda c, job: reverse("machines:generations", kwargs={"slug": c.slug}),
    "exports": lambda c, job: reverse("exports:list", kwargs={"slug": c.slug}),
    "snapshots": lambda c, job: reverse("annotators:dashboard", kwargs={"slug": c.slug}),
    "active_learning": lambda c, job: reverse("learning:page", kwargs={"slug": c.slug}),
    "bulk_actions": lambda c, job: (
        reverse("labeling:browser", kwargs={"slug": c.slug}) + f"?job={job.pk}"
    ),
}


def status_url(kind: str, job) -> str:
    return reverse(
        "labeling:job-status", kwargs={"slug": job.campaign.slug, "kind": kind, "pk": job.pk}
    )


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_every_page_that_shows_a_job_polls_the_one_status_view_at_the_one_interval(
    kind, client, campaign, manager, settings
):
    settings.STEPWISE_JOB_POLL_SECONDS = 7
    job = _job(kind, campaign)

    page = client.get(PAGES[kind](campaign, job)).content.decode()

    poll = f'hx-get="{status_url(kind, job)}?state=running" hx-trigger="every 7s"'
    element = rf'id="job-{kind}-{job.pk}" class="job status-running[^"]*" [^>]*'
    assert re.search(element + re.escape(poll), page)
    assert page.count("hx-trigger=") == 1  # the page polls nothing else
    polled = client.get(f"{status_url(kind, job)}?state=running", **HX).content.decode()
    assert re.match(rf'\s*<\w+ id="job-{kind}-{job.pk}"', polled)  # the element, swapped in
    assert poll in polled
    words = "Computing fresh figures" if kind == "snapshots" else '<span class="job-state">running'
    assert words in polled


@pytest.mark.parametrize("kind", ["imports", "generation", "exports", "bulk_actions"])
def test_a_finished_job_is_swapped_in_and_polled_no_more(kind, client, campaign, manager):
    job = _job(kind, campaign)
    type(job).objects.filter(pk=job.pk).update(status="failed", error="Boom <b>")

    html = client.get(f"{status_url(kind, job)}?state=running", **HX).content.decode()

    assert f'id="job-{kind}-{job.pk}" class="job status-failed' in html
    assert "hx-trigger" not in html and "hx-get" not in html
    assert "failed" in html and "<b>" not in html  # the reason, escaped


@pytest.mark.parametrize("kind", ["active_learning", "snapshots"])
def test_a_job_whose_outcome_is_the_page_reloads_it_when_it_ends(kind, client, campaign, manager):
    job = _job(kind, campaign)
    done = "succeeded" if kind == "active_learning" else "done"
    type(job).objects.filter(pk=job.pk).update(
        status=done, **({"computed_at": timezone.now()} if kind == "snapshots" else {})
    )

    ended = client.get(f"{status_url(kind, job)}?state=running", **HX)

    assert ended.headers["HX-Refresh"] == "true"


def test_the_pages_say_each_state_in_the_same_words_whatever_the_model_calls_it(
    client, campaign, manager
):
    run = _job("active_learning", campaign, status="queued")
    export = _job("exports", campaign, status="pending")

    waiting = [
        client.get(f"{status_url(kind, job)}?state=pending", **HX).content.decode()
        for kind, job in (("active_learning", run), ("exports", export))
    ]
    ActiveLearningRun.objects.filter(pk=run.pk).update(status="succeeded")
    runs = client.get(PAGES["active_learning"](campaign, run)).content.decode()

    assert all('<span class="job-state">waiting for a worker</span>' in h for h in waiting)
    assert f'<tr id="run-{run.pk}">' in runs
    row = re.search(rf'<tr id="run-{run.pk}">.*?</tr>', runs, re.S).group(0)
    assert ">done" in row and "succeeded<" not in row


def test_without_htmx_the_status_view_sends_the_visitor_to_the_kinds_page(
    client, campaign, manager
):
    for kind in PAGES:
        job = _job(kind, campaign)
        response = client.get(status_url(kind, job))
        assert response.status_code == 302
        assert response.url == PAGES[kind](campaign, job).split("?")[0]


def test_an_unknown_kind_or_another_kinds_id_is_not_found(client, campaign, manager):
    export = _job("exports", campaign)
    unknown = reverse("labeling:job-status", kwargs={"slug": "jobs", "kind": "nope", "pk": 1})
    assert client.get(unknown, **HX).status_code == 404
    assert client.get(status_url("imports", export), **HX).status_code == 404

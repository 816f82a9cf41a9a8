"""The labelling page's counts are kept, not counted over the campaign on each render (issue 27):
the campaign's counts are recounted at most every ``STEPWISE_PROGRESS_SECONDS``; what I do is
seen at once; Home and the page agree; the page's queries do not grow with the campaign."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from labeling import queue
from labeling.models import Assignment
from tests.factories import make_campaign, make_labelled, make_member, make_solution

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def campaign():
    return make_campaign(slug="kept", overlap=1)


@pytest.fixture
def annotator(campaign, client):
    user = make_member(campaign=campaign).user
    client.force_login(user)
    return user


def page(client, campaign) -> str:
    response = client.get(reverse("labeling:label", kwargs={"slug": campaign.slug}))
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


def submit_served(client, user) -> str:
    assignment = Assignment.objects.get(annotator=user, status="leased")
    for index in range(assignment.solution.steps.count()):
        client.post(
            reverse(
                "labeling:rate", kwargs={"slug": assignment.campaign.slug, "pk": assignment.pk}
            ),
            {"step_index": index, "rating": 1},
            **HX,
        )
    response = client.post(
        reverse("labeling:submit", kwargs={"slug": assignment.campaign.slug, "pk": assignment.pk}),
        {"submission_key": f"k{assignment.pk}"},
        **HX,
    )
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


def test_my_own_work_is_counted_at_once_others_at_the_recount(client, campaign, annotator):
    for _ in range(5):
        make_solution(campaign=campaign, steps=["a"])
    first = page(client, campaign)  # counts the campaign, then serves me one of the five
    assert "Campaign: <strong>0</strong> of 5 solutions done" in first
    assert "Left for you: <strong>4</strong> solutions" in first

    # Someone else finishes one: not counted until the next recount...
    other = make_member(campaign=campaign).user
    theirs = queue.assignment_next(campaign=campaign, annotator=other)
    make_labelled(solution=theirs.solution, ratings=[1], annotator=other)
    theirs.delete()  # make_labelled wrote their labelling; the lease it replaces goes
    # ...while my submission, and the claim of my next one, are.
    after = submit_served(client, annotator)
    assert "Campaign: <strong>1</strong> of 5 solutions done" in after
    assert "Left for you: <strong>3</strong> solutions" in after


def test_a_recount_sees_everyones_work(client, campaign, annotator, settings):
    settings.STEPWISE_PROGRESS_SECONDS = 0  # no keeping: every page recounts
    for _ in range(4):
        make_solution(campaign=campaign, steps=["a"])
    page(client, campaign)
    other = make_member(campaign=campaign).user
    theirs = queue.assignment_next(campaign=campaign, annotator=other)
    make_labelled(solution=theirs.solution, ratings=[1], annotator=other)
    theirs.delete()
    after = submit_served(client, annotator)
    assert "Campaign: <strong>2</strong> of 4 solutions done" in after
    assert "Left for you: <strong>1</strong> solution<" in after


def test_home_says_what_the_page_says(client, campaign, annotator):
    for _ in range(3):
        make_solution(campaign=campaign, steps=["a", "b"])
    page(client, campaign)
    labelled = submit_served(client, annotator)
    home = " ".join(client.get("/").content.decode().split())
    assert "Left for you: <strong>1</strong> solution<" in labelled
    assert "<dt>Left for you</dt><dd>1 solution</dd>" in home
    assert "You today: <strong>1</strong> solution, 2 steps" in labelled
    assert "<dd>1 solution, 2 steps</dd>" in home


def _queries_of_a_submit(client, campaign, annotator) -> list[str]:
    page(client, campaign)
    assignment = Assignment.objects.get(annotator=annotator, status="leased")
    client.post(
        reverse("labeling:rate", kwargs={"slug": campaign.slug, "pk": assignment.pk}),
        {"step_index": 0, "rating": 1},
        **HX,
    )
    url = reverse("labeling:submit", kwargs={"slug": campaign.slug, "pk": assignment.pk})
    with CaptureQueriesContext(connection) as captured:
        response = client.post(url, {"submission_key": "once"}, **HX)
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def test_a_submit_counts_nothing_over_the_campaign_once_counts_are_kept(
    client, campaign, annotator, monkeypatch
):
    from labeling.selectors import home as selectors

    for _ in range(30):
        make_solution(campaign=campaign, steps=["a"])
    recounts = []
    counted = selectors.campaign_counts_counted

    def spied(**kwargs):  # the real count, noted
        recounts.append(kwargs["campaign"].pk)
        return counted(**kwargs)

    monkeypatch.setattr(selectors, "campaign_counts_counted", spied)
    queries = _queries_of_a_submit(client, campaign, annotator)
    assert recounts == [campaign.pk]  # once, for the first page; the submit read it kept
    # What the submit counted is the annotator's own rows, or the submitted solution's labels
    # (its disagreements, kept on the solution).
    solution = Assignment.objects.get(submission_key="once").solution_id
    for sql in queries:
        if "COUNT(" in sql.upper():
            assert (
                "annotator_id = " in sql
                or "assignment_id = " in sql
                or sql.rstrip().endswith(f"WHERE id IN ({solution})")
            ), sql

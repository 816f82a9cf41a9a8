"""Feedback where the annotator works: rejections of my work and a missed QC error on the
labelling page, links to My work and the campaign, and the same counts as Home."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotators.review.services import review_submit
from labeling.models import Assignment
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_member,
    make_solution,
    submit_ratings,
)

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def campaign():
    return make_campaign(slug="feedback", overlap=2)


@pytest.fixture
def annotator(campaign, client):
    user = make_member(campaign=campaign).user
    client.force_login(user)
    return user


def label_page(client, campaign) -> str:
    response = client.get(reverse("labeling:label", kwargs={"slug": campaign.slug}))
    assert response.status_code == 200
    return response.content.decode()


def submitted_by(user, campaign, ratings=None) -> Assignment:
    from labeling import queue

    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    assert assignment is not None
    submit_ratings(assignment=assignment, annotator=user, ratings=ratings)
    assignment.refresh_from_db()
    return assignment


def rejected(assignment, campaign, comment):
    reviewer = make_member(campaign=campaign, role="reviewer").user
    review_submit(assignment=assignment, reviewer=reviewer, decision="rejected", comment=comment)


def test_a_rejection_of_my_work_is_shown_with_its_comment_and_a_link(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b"])
    make_solution(campaign=campaign, steps=["c"])
    mine = submitted_by(annotator, campaign)
    rejected(mine, campaign, "Step 2 is **wrong**: 3 + 4 is not 8.")
    page = label_page(client, campaign)
    assert 'id="rejections"' in page
    assert "<strong>wrong</strong>: 3 + 4 is not 8." in page
    link = reverse("labeling:my-work-item", kwargs={"slug": campaign.slug, "pk": mine.pk})
    assert f'href="{link}"' in page
    opened = client.get(link)
    assert opened.status_code == 200
    assert "3 + 4 is not 8" in opened.content.decode()


def test_someone_elses_rejection_is_not_shown(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a"])
    make_solution(campaign=campaign, steps=["b"])
    other = make_member(campaign=campaign).user
    rejected(submitted_by(other, campaign), campaign, "Not yours to see.")
    page = label_page(client, campaign)
    assert 'id="rejections"' not in page
    assert "Not yours to see." not in page


def test_the_page_links_to_my_work_and_the_campaign(client, campaign, annotator):
    page = label_page(client, campaign)
    assert f'href="{reverse("labeling:my-work", kwargs={"slug": campaign.slug})}"' in page
    assert f'href="{reverse("labeling:campaign", kwargs={"slug": campaign.slug})}"' in page


def test_home_and_the_labelling_page_count_the_same(client, campaign, annotator):
    for _ in range(4):
        make_solution(campaign=campaign, steps=["x", "y"])
    submitted_by(annotator, campaign)
    submitted_by(annotator, campaign, ratings=[1, -1])
    home = client.get("/").content.decode()
    page = label_page(client, campaign)  # leases one more: not submitted, still "left" on both
    home_after = client.get("/").content.decode()
    assert "2 solutions, 4 steps" in home
    assert 'id="you-today">You today: <strong>2</strong> solutions, 4 steps' in page
    assert "<dd>1 solution</dd>" in home_after
    assert "Left for you: <strong>1</strong> solution<" in page


def qc_campaign():
    campaign = make_campaign(slug="qc-feedback", qc_rate=1.0)
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1, None], steps=["a", "b", "c"])
    return campaign


def serve_and_submit(client, campaign, ratings, **headers):
    page = label_page(client, campaign)
    assignment = Assignment.objects.get(status="leased")
    for index, rating in enumerate(ratings):
        client.post(
            reverse("labeling:rate", kwargs={"slug": campaign.slug, "pk": assignment.pk}),
            {"step_index": index, "rating": rating},
            **HX,
        )
    response = client.post(
        reverse("labeling:submit", kwargs={"slug": campaign.slug, "pk": assignment.pk}),
        {"submission_key": f"web-{assignment.pk}"},
        follow=True,
        **headers,
    )
    return page, response.content.decode()


@pytest.mark.parametrize("headers", [HX, {}], ids=["htmx", "plain form"])
def test_a_missed_qc_error_is_said_after_submitting_never_before(client, headers):
    campaign = qc_campaign()
    user = make_member(campaign=campaign).user
    client.force_login(user)
    before, after = serve_and_submit(client, campaign, [1, 1, 1], **headers)
    assert "quality-control" not in before
    assert "That was a quality-control question, and you missed its first error" in after
    # They gave no −1: never told about a "first −1" they did not give.
    assert "you rated no step −1" in after
    assert "your first −1" not in after


def test_a_first_negative_on_the_wrong_step_is_said_as_such(client):
    campaign = make_campaign(slug="qc-elsewhere", qc_rate=1.0)
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, 1, -1], steps=["a", "b", "c"])
    client.force_login(make_member(campaign=campaign).user)
    _before, after = serve_and_submit(client, campaign, [1, -1], **HX)
    assert "your first −1 was not on the step the reference marks" in after
    assert "you rated no step −1" not in after


def test_giving_up_on_a_qc_question_says_nothing_about_quality_control(client):
    campaign = qc_campaign()
    client.force_login(make_member(campaign=campaign).user)
    page = label_page(client, campaign)
    assignment = Assignment.objects.get(status="leased")
    response = client.post(
        reverse("labeling:submit", kwargs={"slug": campaign.slug, "pk": assignment.pk}),
        {"submission_key": "g", "finish_reason": "give_up"},
        **HX,
    )
    assert "quality-control" not in page + response.content.decode()


def test_a_found_qc_error_says_nothing_about_quality_control(client):
    campaign = qc_campaign()
    user = make_member(campaign=campaign).user
    client.force_login(user)
    _before, after = serve_and_submit(client, campaign, [1, -1])
    assert "quality-control" not in after
    assert "Submitted: error found." in after

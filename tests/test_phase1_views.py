"""Phase 1 mode's labelling page over HTTP: plain forms without JavaScript, htmx partials,
refusals, and what an annotator never sees there (others' ratings, others' written steps)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from imports.pipeline import import_file
from labeling.models import Assignment, CandidateLabel, StepCandidate
from tests import phase1_data as data
from tests.factories import make_campaign, make_member, make_solution

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def campaign(tmp_path):
    campaign = make_campaign(slug="tree", phase1_mode=True, overlap=3)
    import_file(data.write_line(tmp_path / "p1.jsonl"), campaign=campaign, fmt="prm800k")
    return campaign


@pytest.fixture
def annotator(campaign, client):
    user = make_member(campaign=campaign).user
    client.force_login(user)
    return user


def url(name, assignment):
    return reverse(
        f"labeling:{name}", kwargs={"slug": assignment.campaign.slug, "pk": assignment.pk}
    )


def page(client, campaign):
    response = client.get(reverse("labeling:label", kwargs={"slug": campaign.slug}))
    assert response.status_code == 200
    return response


def candidate(text):
    return StepCandidate.objects.get(text=text, author__isnull=True)


def test_the_page_shows_the_candidates_and_never_the_imported_ratings(client, annotator, campaign):
    html = page(client, campaign).content.decode()

    assert "data-phase1" in html
    for text in ("Add first", "Multiply first", "I see a sum."):
        assert text in html
    # The imported labeler rated A negative and B positive: nothing of that is on the page.
    assert "negative</span>" not in html and "positive</span>" not in html
    assert "Step 1: 3 candidates" in html


def test_without_javascript_every_action_posts_and_redirects(client, annotator, campaign):
    page(client, campaign)
    assignment = Assignment.objects.get(annotator=annotator)
    for text, rating in zip(data.STEP1, [-1, 1, 0], strict=True):
        response = client.post(
            url("candidate-rate", assignment), {"candidate": candidate(text).pk, "rating": rating}
        )
        assert response.status_code == 302
    response = client.post(
        url("candidate-choose", assignment), {"candidate": candidate(data.STEP1[1]).pk}
    )
    assert response.status_code == 302
    html = page(client, campaign).content.decode()
    assert "1 step chosen" in html
    assert f'id="candidate-{candidate(data.STEP2[0]).pk}"' in html

    response = client.post(
        url("candidate-undo", assignment), {"candidate": candidate(data.STEP1[1]).pk}
    )
    assert response.status_code == 302
    assert not CandidateLabel.objects.filter(chosen=True).exists()


def test_htmx_gets_the_partial_and_a_refusal_says_why(client, annotator, campaign):
    page(client, campaign)
    assignment = Assignment.objects.get(annotator=annotator)
    response = client.post(
        url("candidate-rate", assignment),
        {"candidate": candidate(data.STEP1[0]).pk, "rating": 1},
        **HX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="steps" class="steps phase1"')
    assert 'data-rated="0-A1"' in html

    response = client.post(
        url("candidate-choose", assignment), {"candidate": candidate(data.STEP2[0]).pk}, **HX
    )
    assert response.status_code == 400
    assert "not a candidate for step 1 of your solution" in response.content.decode()

    response = client.post(url("submit", assignment), {"submission_key": "k"}, **HX)
    assert response.status_code == 400
    assert "no final answer yet" in response.content.decode()


def test_another_annotator_cannot_act_on_my_assignment_nor_see_my_written_step(
    client, annotator, campaign
):
    page(client, campaign)
    mine = Assignment.objects.get(annotator=annotator)
    for text in data.STEP1:
        client.post(url("candidate-rate", mine), {"candidate": candidate(text).pk, "rating": 0})
    client.post(url("step-write", mine), {"position": 0, "text": "My secret first step."})

    other = make_member(campaign=campaign).user
    client.force_login(other)
    response = client.post(
        url("candidate-rate", mine), {"candidate": candidate(data.STEP1[0]).pk, "rating": 1}
    )
    assert response.status_code == 404
    html = page(client, campaign).content.decode()
    assert "My secret first step." not in html
    assert "Multiply first" in html


def test_a_campaign_without_the_mode_labels_as_before(client):
    campaign = make_campaign(slug="plain")
    make_solution(campaign=campaign, steps=["a", "b"])
    user = make_member(campaign=campaign).user
    client.force_login(user)
    html = page(client, campaign).content.decode()
    assert "data-phase1" not in html and 'data-key="1"' in html
    assert not StepCandidate.objects.exists()

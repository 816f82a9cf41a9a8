"""The campaign setting ``reviewers_see_evidence`` (off by default): reviewers see the machine
evidence (rollout values, a judge's verdict) on the review page; annotators never see it on the
labelling page, whatever the setting."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.forms import CampaignForm
from labeling.models import Assignment, Membership, StepEvidence
from tests.factories import make_campaign, make_labelled, make_member, make_problem, make_solution

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
ROLLOUT_MODEL = "rollout-model-7b"
JUDGE_MODEL = "judge-model-70b"
STEPS = ["We have $1 + 1 = 2$.", "Doubling gives $2 \\cdot 2 = 5$.", "# Answer\n\n5"]


def _with_evidence(campaign):
    problem = make_problem(campaign=campaign, text="What is $(1+1) \\cdot 2$?")
    solution = make_solution(campaign=campaign, problem=problem, steps=STEPS, answer="5")
    first, second = solution.steps.get(index=0), solution.steps.get(index=1)
    for step, value, correct in ((first, 0.75, 6), (second, 0.0, 0)):
        StepEvidence.objects.create(
            solution=solution,
            step=step,
            kind=StepEvidence.Kind.ROLLOUT,
            model=ROLLOUT_MODEL,
            value=value,
            samples=8,
            correct=correct,
        )
    for step, value in ((first, 1.0), (second, 0.0)):
        StepEvidence.objects.create(
            solution=solution,
            step=step,
            kind=StepEvidence.Kind.JUDGE,
            model=JUDGE_MODEL,
            value=value,
        )
    return solution


def _review_page(client, campaign, solution) -> str:
    work = make_labelled(solution=solution, ratings=[1, 1, 1])
    reviewer = make_member(campaign=campaign, role=Membership.Role.REVIEWER).user
    client.force_login(reviewer)
    url = reverse("annotators:review", kwargs={"slug": campaign.slug, "pk": work.pk})
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_reviewers_see_no_evidence_by_default(client):
    campaign = make_campaign(slug="off")
    assert campaign.reviewers_see_evidence is False
    page = _review_page(client, campaign, _with_evidence(campaign))
    assert ROLLOUT_MODEL not in page and JUDGE_MODEL not in page
    assert "reach the answer" not in page and "machines</th>" not in page


def test_reviewers_see_the_evidence_when_the_campaign_says_so(client):
    campaign = make_campaign(slug="on", reviewers_see_evidence=True)
    page = _review_page(client, campaign, _with_evidence(campaign))
    assert "machines</th>" in page
    assert "rollouts: 6 of 8 reach the answer" in page
    assert "rollouts: 0 of 8 reach the answer" in page
    assert "judge: first error here" in page and "judge: correct" in page
    assert ROLLOUT_MODEL in page and JUDGE_MODEL in page


@pytest.mark.parametrize("shown_to_reviewers", [False, True])
def test_annotators_never_see_evidence_on_the_labelling_page(client, shown_to_reviewers):
    campaign = make_campaign(slug="label", reviewers_see_evidence=shown_to_reviewers)
    _with_evidence(campaign)
    annotator = make_member(campaign=campaign).user
    client.force_login(annotator)
    pages = [client.get(reverse("labeling:label", kwargs={"slug": campaign.slug}))]
    assignment = Assignment.objects.get(annotator=annotator, status="leased")
    for index in range(len(STEPS)):
        pages.append(
            client.post(
                reverse("labeling:rate", kwargs={"slug": campaign.slug, "pk": assignment.pk}),
                {"step_index": index, "rating": 1},
                **HX,
            )
        )
    assert [p.status_code for p in pages] == [200] * (len(STEPS) + 1)
    assert "Doubling gives" in "".join(p.content.decode() for p in pages)
    for response in pages:
        html = response.content.decode()
        for word in (ROLLOUT_MODEL, JUDGE_MODEL, "reach the answer", "judge:", "evidence-"):
            assert word not in html
    # Nor may they open the review page, where reviewers would see it.
    review = reverse("annotators:review", kwargs={"slug": campaign.slug, "pk": assignment.pk})
    assert client.get(review).status_code in (403, 404)


def test_the_setting_is_on_the_campaigns_settings_form():
    form = CampaignForm()
    assert "reviewers_see_evidence" in form.fields
    assert form.fields["reviewers_see_evidence"].initial is False

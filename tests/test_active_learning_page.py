"""The manager's active-learning page: who may see it, what it shows, "Retrain now"."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from labeling.models import Campaign, Membership
from learning.models import ActiveLearningRun, PRMModel
from tests.factories import make_campaign, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    campaign = make_campaign(name="Algebra <b>bold</b>", active_learning=True, al_retrain_every=50)
    for correct, score, priority in ((False, 0.9, 3), (True, 0.8, 2), (None, 0.15, 1)):
        make_solution(
            campaign=campaign, answer_is_correct=correct, prm_score=score, priority=priority
        )
    return campaign


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role=Membership.Role.MANAGER).user


def page(campaign):
    return reverse("learning:page", kwargs={"slug": campaign.slug})


def retrain(campaign):
    return reverse("learning:retrain", kwargs={"slug": campaign.slug})


def test_anonymous_visitors_go_to_the_login_page(client, campaign):
    response = client.get(page(campaign))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_outsiders_get_404_and_annotators_and_reviewers_403(client, campaign):
    client.force_login(make_user())
    assert client.get(page(campaign)).status_code == 404
    assert client.post(retrain(campaign)).status_code == 404
    for role in (Membership.Role.ANNOTATOR, Membership.Role.REVIEWER):
        client.force_login(make_member(campaign=campaign, role=role).user)
        assert client.get(page(campaign)).status_code == 403
        assert client.post(retrain(campaign)).status_code == 403
    assert not ActiveLearningRun.objects.exists()


def test_the_manager_of_another_campaign_gets_404(client, campaign):
    other = make_member(campaign=make_campaign(), role=Membership.Role.MANAGER).user
    client.force_login(other)
    assert client.get(page(campaign)).status_code == 404


def test_managers_see_settings_models_runs_and_the_queue_head(client, campaign, manager):
    PRMModel.objects.create(
        campaign=campaign, version=1, path="p/1", metrics={"auroc": 0.61, "split": "test"}
    )
    active = PRMModel.objects.create(
        campaign=campaign,
        version=2,
        path="p/2",
        is_active=True,
        training_labels=1234,
        metrics={"auroc": 0.66, "auroc_ci95": [0.6, 0.7], "split": "test"},
    )
    ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        model=active,
        training_labels=1234,
        metrics=active.metrics,
        timings={"export": 0.5, "train": 3.25, "total": 5.0},
        queue_head={"size": 3, "wrong": 1},
    )
    client.force_login(manager)
    response = client.get(page(campaign))
    assert response.status_code == 200
    body = response.content.decode()
    assert "retrains after every 50 new submitted step labels" in body
    assert "v2, trained on 1,234 labels" in body
    assert (
        "<strong>1</strong> have a wrong final answer, 1 a right one, 1 could not be graded" in body
    )
    assert "0.660 (0.600–0.700)" in body
    assert "3.25" in body  # the train stage's seconds
    assert body.count('<svg class="chart"') == 2
    assert 'name="csrfmiddlewaretoken"' in body
    # No inline script (a Content Security Policy forbids them).
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", body)


def test_the_campaign_pages_link_to_it(client, campaign, manager):
    client.force_login(manager)
    body = client.get(reverse("annotators:dashboard", kwargs={"slug": campaign.slug})).content
    assert page(campaign).encode() in body


def test_user_text_is_escaped(client, campaign, manager):
    user = make_user(username="eve")
    ActiveLearningRun.objects.create(
        campaign=campaign,
        status="failed",
        requested_by=user,
        error="ValueError: <script>alert(1)</script>",
    )
    client.force_login(manager)
    body = client.get(page(campaign)).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<b>bold</b>" not in body and "&lt;b&gt;bold&lt;/b&gt;" in body


def test_retrain_now_queues_one_run_and_comes_back(
    client, campaign, manager, django_capture_on_commit_callbacks
):
    client.force_login(manager)
    with django_capture_on_commit_callbacks() as sent:
        response = client.post(retrain(campaign))
        again = client.post(retrain(campaign))
    assert response.status_code == 302 and response["Location"] == page(campaign)
    assert again.status_code == 302
    run = ActiveLearningRun.objects.get(campaign=campaign)
    assert run.trigger == "manual" and run.requested_by == manager and run.status == "queued"
    assert len(sent) == 1
    assert client.get(retrain(campaign)).status_code == 405


def test_retrain_needs_the_csrf_token(campaign, manager):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)
    assert client.post(retrain(campaign)).status_code == 403
    assert not ActiveLearningRun.objects.exists()


def test_the_run_in_progress_is_polled_with_the_one_job_status_until_it_ends(
    client, campaign, manager
):
    client.force_login(manager)
    assert "hx-trigger" not in client.get(page(campaign)).content.decode()

    run = ActiveLearningRun.objects.create(
        campaign=campaign, status="running", timings={"stage": "train"}
    )
    body = client.get(page(campaign)).content.decode()
    status = reverse(
        "labeling:job-status",
        kwargs={"slug": campaign.slug, "kind": "active_learning", "pk": run.pk},
    )
    assert f'hx-get="{status}?state=running" hx-trigger="every 2s"' in body
    assert f'Run {run.pk}: <span class="job-state">running: train</span>' in body

    ActiveLearningRun.objects.filter(pk=run.pk).update(status="succeeded")
    ended = client.get(f"{status}?state=running", HTTP_HX_REQUEST="true")
    assert ended.headers["HX-Refresh"] == "true"  # the page reloads with the run's outcome
    assert "hx-trigger" not in client.get(page(campaign)).content.decode()


CURVE = {
    "problems": 3,
    "solutions": 14,
    "most": 6,
    "n": [1, 2, 4, 6],
    "problems_at_n": [3, 3, 2, 1],
    "accuracy": {
        "PRM (product)": [0.5, 0.55, 0.6, 0.62],
        "PRM (min)": [0.5, 0.52, 0.58, 0.6],
        "ORM": [0.5, 0.51, 0.5, 0.49],
        "majority": [0.5, 0.56, 0.7, 0.72],
        "random": [0.5, 0.5, 0.5, 0.5],
        "oracle": [0.5, 0.75, 0.9, 1.0],
    },
    "orm_solutions": 321,
    "data": "graded.jsonl",
}


def test_the_page_shows_the_strategy_and_why_it_is_the_default(client, campaign, manager):
    campaign.al_strategy = "uncertainty"
    campaign.save()
    client.force_login(manager)
    body = client.get(page(campaign)).content.decode()
    assert "uncertainty (where the PRM is least sure)" in body
    assert "<code>uncertainty</code>" in body
    assert "docs/active-learning.md" in body  # the measured reason for the default


def test_the_best_of_n_curve_is_a_chart_and_a_table(client, campaign, manager):
    model = PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v0001")
    run = ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        model=model,
        strategy="mixed",
        best_of_n=CURVE,
    )
    client.force_login(manager)
    body = client.get(page(campaign)).content.decode()
    assert body.count('<svg class="chart"') == 3
    assert "Best-of-N accuracy on held-out problems" in body
    assert body.count("<polyline") >= 6  # one line per method (and the AUROC chart's)
    table = body[body.index('id="best-of-n"') :]
    table = table[: table.index("</table>")]
    for n in (1, 2, 4, 6):
        assert f"<th>N={n}</th>" in table
    assert "<th>oracle</th><td>0.500</td><td>0.750</td><td>0.900</td><td>1.000</td>" in table
    assert "<th>majority</th><td>0.500</td><td>0.560</td><td>0.700</td><td>0.720</td>" in table
    assert "321 graded solutions" in body
    assert f"run-{run.pk}/graded.jsonl" in body and "prm bestofn" in body
    assert f'<tr id="run-{run.pk}">' in body and "<td>mixed</td>" in body


def test_a_run_without_held_out_problems_says_why(client, campaign, manager):
    ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        best_of_n={"skipped": "no held-out problem has several solutions with a graded answer"},
    )
    client.force_login(manager)
    body = client.get(page(campaign)).content.decode()
    assert "Not measured: no held-out problem has several solutions" in body


def test_the_settings_form_takes_the_strategy(client, campaign, manager):
    from labeling.forms import CampaignForm

    form = CampaignForm(instance=campaign)
    assert "al_strategy" in form.fields
    choices = [value for value, _ in form.fields["al_strategy"].choices]
    assert {"convincing-wrong", "uncertainty", "verifier", "uniform", "mixed"} <= set(choices)


def test_the_api_says_which_strategy_ordered_the_queue(client, campaign, manager):
    run = ActiveLearningRun.objects.create(
        campaign=campaign, status="succeeded", strategy="uniform", best_of_n=CURVE
    )
    client.force_login(manager)
    url = f"/api/campaigns/{campaign.slug}/active-learning/runs/{run.pk}/"
    data = client.get(url).json()
    assert data["strategy"] == "uniform"
    assert data["best_of_n"]["accuracy"]["oracle"] == CURVE["accuracy"]["oracle"]


def test_the_settings_form_keeps_the_strategy_when_a_client_does_not_send_it(campaign):
    from django.forms.models import model_to_dict

    from labeling.forms import CampaignForm

    campaign.al_strategy = "mixed"
    campaign.save()
    data = {k: v for k, v in model_to_dict(campaign).items() if v is not None}
    data.pop("al_strategy")
    form = CampaignForm(data, instance=campaign)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["al_strategy"] == "mixed"
    data["al_strategy"] = "verifier"
    form = CampaignForm(data, instance=campaign)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["al_strategy"] == "verifier"


def test_the_campaign_api_says_which_strategy_orders_the_queue(client, campaign, manager):
    campaign.al_strategy = "verifier"
    campaign.save()
    client.force_login(manager)
    assert client.get(f"/api/campaigns/{campaign.slug}/").json()["al_strategy"] == "verifier"


def test_a_served_prm_is_shown_by_name_and_scoring_is_queued_from_the_page(
    client, campaign, manager, settings, django_capture_on_commit_callbacks
):
    from machines.models import ScoringJob

    settings.STEPWISE_ENDPOINTS = [
        {"name": "qwen-prm", "kind": "pooling", "base_url": "http://gpu:8001", "models": ["m"]}
    ]
    Campaign.objects.filter(pk=campaign.pk).update(al_scoring_endpoint="qwen-prm")
    client.force_login(manager)
    body = client.get(page(campaign)).content.decode()
    assert "qwen-prm" in body and "http://gpu" not in body
    assert "Score with the served PRM" in body
    with django_capture_on_commit_callbacks() as sent:
        response = client.post(reverse("learning:score", kwargs={"slug": campaign.slug}))
    assert response.status_code == 302
    assert len(sent) == 1
    job = ScoringJob.objects.get(campaign=campaign)
    assert (job.endpoint, job.model, job.status) == ("qwen-prm", "m", "pending")
    body = client.get(page(campaign)).content.decode()
    assert "Scoring with qwen-prm" in body


def test_scoring_is_for_managers_only(client, campaign):
    annotator = make_member(campaign=campaign).user
    client.force_login(annotator)
    response = client.post(reverse("learning:score", kwargs={"slug": campaign.slug}))
    assert response.status_code == 403


def test_the_page_names_what_ordered_the_queue_and_what_the_rule_buys(client, campaign, manager):
    """Issue 38: the model that ordered the queue (own or served, by name; before any label the
    served PRM standing in) and, under a strategy, the ablation's sentence."""
    from django.utils.html import escape

    from learning.strategies import RULE_PAYS

    campaign.al_strategy = "served-prm"
    campaign.save()
    ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        training_labels=0,
        queue_head={
            "size": 3,
            "ordered_by": {"kind": "served", "name": "the served PRM Team PRM (prm), model m"},
            "labels": 0,
        },
    )
    client.force_login(manager)
    html = client.get(page(campaign)).content.decode()
    row = re.search(r'<tr id="al-ordered-by">(.*?)</tr>', html, re.S)
    assert row is not None
    assert "The served PRM Team PRM (prm), model m" in row.group(1)
    assert "no labels yet" in row.group(1)
    assert escape(RULE_PAYS) in html and 'id="al-rule-pays"' in html

    campaign.al_strategy = "uniform"  # the control itself: nothing to say of a rule
    campaign.save()
    html = client.get(page(campaign)).content.decode()
    assert 'id="al-rule-pays"' not in html

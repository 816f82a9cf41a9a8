"""The campaign settings form: the PRM backbone is a choice of the backbones the app trains, and
the form pages (log in, sign up, settings) share the app's styling."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import AL_BACKBONES, Campaign, Membership
from tests.factories import make_campaign, make_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return make_campaign(slug="settings")


@pytest.fixture
def manager(client, campaign):
    user = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(user)
    return user


def settings_url(campaign):
    return reverse("labeling:campaign-settings", kwargs={"slug": campaign.slug})


def posted(campaign, **changes):
    data = {
        "name": campaign.name,
        "instructions": "",
        "overlap": 1,
        "lease_seconds": 1800,
        "stop_at_first_error": "on",
        "qc_rate": 0,
        "screening_threshold": 0.75,
        "bad_problem_limit": 2,
        "al_wrong_answer_share": 0.8,
        "al_retrain_every": 500,
        "al_backbone": "bow",
    }
    return data | changes


def test_the_backbone_is_a_select_of_the_known_backbones(client, campaign, manager):
    body = client.get(settings_url(campaign)).content.decode()

    assert '<select name="al_backbone"' in body
    for name, _ in AL_BACKBONES:
        assert f'<option value="{name}"' in body


def test_choosing_minilm_saves_it(client, campaign, manager):
    response = client.post(settings_url(campaign), posted(campaign, al_backbone="minilm"))

    assert response.status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).al_backbone == "minilm"


def test_a_backbone_the_app_does_not_know_is_refused(client, campaign, manager):
    response = client.post(settings_url(campaign), posted(campaign, al_backbone="gpt-9"))

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).al_backbone == "bow"


def test_a_backbone_the_site_does_not_offer_must_be_replaced(client, campaign, manager):
    """A name set elsewhere (here a path) is not on the operator's list (issue 16: only the
    operator chooses models): keeping it is refused, naming it; an offered one saves."""
    Campaign.objects.filter(pk=campaign.pk).update(al_backbone="hf:/models/qwen")

    body = client.get(settings_url(campaign)).content.decode()
    refused = client.post(settings_url(campaign), posted(campaign, al_backbone="hf:/models/qwen"))
    saved = client.post(settings_url(campaign), posted(campaign, al_backbone="bow"))

    assert 'value="hf:/models/qwen"' not in body
    assert refused.status_code == 400 and "hf:/models/qwen" in refused.content.decode()
    assert saved.status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).al_backbone == "bow"


@pytest.mark.parametrize("who", ["login", "settings"])
def test_form_pages_use_the_app_stylesheet_and_carry_csrf(client, campaign, who):
    if who == "settings":
        client.force_login(make_member(campaign=campaign, role="manager").user)
        url, form_class = settings_url(campaign), "settings-form"
    else:
        url, form_class = reverse("login"), "stacked"

    body = client.get(url).content.decode()

    assert "css/stepwise.css" in body
    assert f'class="card {form_class}"' in body or f"card {form_class}" in body
    assert 'name="csrfmiddlewaretoken"' in body


@pytest.fixture
def scoring_endpoints(settings):
    settings.STEPWISE_ENDPOINTS = [
        {
            "name": "qwen-prm",
            "kind": "pooling",
            "base_url": "http://gpu:8001",
            "models": ["a", "b"],
        },
        {"name": "judge", "kind": "step-scores", "base_url": "http://gpu:8002", "models": ["j"]},
        {"name": "writer", "kind": "chat", "base_url": "http://gpu:8003", "models": ["w"]},
    ]


def test_the_served_prm_is_a_select_of_the_declared_scoring_endpoints_by_name(
    client, campaign, manager, scoring_endpoints
):
    body = client.get(settings_url(campaign)).content.decode()

    assert '<select name="al_scoring_endpoint"' in body
    assert '<option value="qwen-prm"' in body and '<option value="judge"' in body
    scoring = body.split('<select name="al_scoring_endpoint"', 1)[1].split("</select>", 1)[0]
    assert '<option value="writer"' not in scoring  # a chat endpoint does not score
    # It samples phase 1 mode's candidates instead (a select of its own).
    sampling = body.split('<select name="phase1_endpoint"', 1)[1].split("</select>", 1)[0]
    assert '<option value="writer"' in sampling and '<option value="judge"' not in sampling
    assert "http://gpu" not in body  # managers never see the operator's URLs


def test_choosing_a_served_prm_saves_its_name_and_model(
    client, campaign, manager, scoring_endpoints
):
    response = client.post(
        settings_url(campaign),
        posted(campaign, al_scoring_endpoint="qwen-prm", al_strategy="served-prm"),
    )
    assert response.status_code == 302
    campaign.refresh_from_db()
    assert (campaign.al_scoring_endpoint, campaign.al_scoring_model) == ("qwen-prm", "a")
    assert campaign.al_strategy == "served-prm"


def test_an_undeclared_endpoint_or_model_and_the_served_strategy_alone_are_refused(
    client, campaign, manager, scoring_endpoints
):
    for changes, field in (
        ({"al_scoring_endpoint": "elsewhere"}, "al_scoring_endpoint"),
        ({"al_scoring_endpoint": "writer"}, "al_scoring_endpoint"),
        ({"al_scoring_endpoint": "qwen-prm", "al_scoring_model": "c"}, "al_scoring_model"),
        ({"al_strategy": "served-prm"}, "al_scoring_endpoint"),
    ):
        response = client.post(settings_url(campaign), posted(campaign, **changes))
        assert response.status_code == 400, changes
        assert field in response.context["form"].errors, changes
    campaign.refresh_from_db()
    assert campaign.al_scoring_endpoint == ""

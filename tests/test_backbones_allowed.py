"""Only the operator chooses models: managers pick a backbone from ``STEPWISE_PRM_BACKBONES``;
``hf:NAME`` folders live under ``STEPWISE_MODEL_ROOT``; loading never leaves the machine and its
errors never quote a path or a file's content."""

from __future__ import annotations

import pytest

from labeling.backbones import BackboneRefused, backbone_spec, backbones_allowed
from labeling.forms import CampaignForm
from labeling.models import Membership
from learning.models import ActiveLearningRun
from learning.run import active_learning_run
from tests.factories import make_campaign, make_member, make_token

SECRET = "do-not-show-this-0xC0FFEE"


@pytest.fixture
def models(settings, tmp_path):
    root = tmp_path / "models"
    (root / "tiny").mkdir(parents=True)
    (root / "tiny" / "config.json").write_text("{}")
    settings.STEPWISE_MODEL_ROOT = root
    settings.STEPWISE_PRM_BACKBONES = "bow,minilm,hf:tiny,hf:../escape,hf:/etc"
    return root


def _form(**changes):
    data = {
        "name": "A",
        "overlap": 1,
        "lease_seconds": 600,
        "stop_at_first_error": True,
        "qc_rate": 0.0,
        "screening_threshold": 0.75,
        "bad_problem_limit": 3,
        "al_wrong_answer_share": 0.8,
        "al_retrain_every": 100,
        "al_backbone": "bow",
    }
    return CampaignForm({**data, **changes})


def test_only_well_formed_names_from_the_setting_are_offered(models):
    assert backbones_allowed() == ["bow", "minilm", "hf:tiny"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "value", ["hf:/etc", "hf:../../var/secret_key", "hf:bert-base-uncased", "hf:other", "x"]
)
def test_the_campaign_form_refuses_a_backbone_not_on_the_list(models, value):
    form = _form(al_backbone=value)
    assert not form.is_valid()
    assert "al_backbone" in form.errors


@pytest.mark.django_db
def test_the_campaign_form_offers_the_list_and_accepts_a_listed_model(models):
    form = _form(al_backbone="hf:tiny")
    assert form.is_valid(), form.errors
    assert [c for c, _ in form.fields["al_backbone"].choices] == ["bow", "minilm", "hf:tiny"]


@pytest.mark.django_db
def test_the_api_refuses_a_backbone_path(client, models):
    campaign = make_campaign(slug="bb")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    key = make_token(user=manager)
    response = client.patch(
        "/api/campaigns/bb/",
        {"al_backbone": "hf:/etc"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 400
    assert "al_backbone" in response.json()
    campaign.refresh_from_db()
    assert campaign.al_backbone == "bow"
    ok = client.patch(
        "/api/campaigns/bb/",
        {"al_backbone": "hf:tiny"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert ok.status_code == 200 and ok.json()["al_backbone"] == "hf:tiny"


def test_a_listed_folder_resolves_under_the_root(models):
    assert backbone_spec("hf:tiny") == f"hf:{(models / 'tiny').resolve()}"
    assert backbone_spec("minilm") == "minilm"


def test_a_symlink_out_of_the_root_is_refused(models, tmp_path, settings):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(SECRET)
    (models / "link").symlink_to(outside)
    settings.STEPWISE_PRM_BACKBONES = "bow,hf:link"
    with pytest.raises(BackboneRefused) as refused:
        backbone_spec("hf:link")
    assert str(outside) not in str(refused.value) and SECRET not in str(refused.value)


def test_a_name_not_on_the_list_is_refused_at_run_time(models):
    for name in ("hf:/etc", "hf:../escape", "hf:missing"):
        with pytest.raises(BackboneRefused):
            backbone_spec(name)


@pytest.mark.django_db(transaction=True)
def test_a_run_with_a_stored_path_fails_without_touching_it(models, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = make_campaign(al_backbone="hf:/etc/passwd")
    run = ActiveLearningRun.objects.create(campaign=campaign)
    with pytest.raises(BackboneRefused):
        active_learning_run(run=run)
    run.refresh_from_db()
    assert run.status == "failed" and "not offered" in run.error
    assert "root:" not in run.error


def test_a_folder_that_is_not_a_model_fails_without_quoting_it(tmp_path):
    from prm.backbones import BackboneLoadError, HFTokenBackbone

    folder = tmp_path / "secretish"
    folder.mkdir()
    (folder / "config.json").write_text(SECRET)
    with pytest.raises(BackboneLoadError) as failed:
        HFTokenBackbone(path=str(folder))
    assert SECRET not in str(failed.value) and str(folder) not in str(failed.value)
    with pytest.raises(BackboneLoadError) as missing:
        HFTokenBackbone(path="bert-base-uncased")  # a hub id: never fetched
    assert "bert" not in str(missing.value)


def test_loading_is_forced_offline(monkeypatch):
    from prm.backbones import quiet_transformers

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    quiet_transformers()
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"

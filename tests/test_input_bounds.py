"""No 500 from input: page numbers past any table, times past the database's integers, lists
longer than the solution, and JSON bodies holding what no field can store. Each is a 400 (or a
clamp, for client-measured times) that names the field."""

from __future__ import annotations

import pytest

from labeling.models import Assignment, Membership, StepLabel
from tests.factories import (
    api_client_for,
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
)

pytestmark = pytest.mark.django_db

HUGE = "9" * 30  # past 64 bits


@pytest.fixture
def campaign():
    return make_campaign(slug="bounds", overlap=2)


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role=Membership.Role.MANAGER).user


@pytest.fixture
def annotator(campaign):
    return make_member(campaign=campaign).user


@pytest.mark.parametrize("page", ["reviews/", "gold/", "my-reviews/"])
def test_a_page_number_past_64_bits_is_a_400_naming_page(client, campaign, manager, page):
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, 1, 1])
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1])
    client.force_login(manager)
    url = f"/campaigns/bounds/{page}"
    assert client.get(url).status_code == 200
    assert client.get(url + "?page=2147483647").status_code == 200  # empty, not an error
    response = client.get(url + f"?page={HUGE}")
    assert response.status_code == 400
    assert "page: must be a page number" in response.content.decode()
    assert client.get(url + "?page=abc").status_code == 200  # the first page, as before


def test_a_solution_id_past_64_bits_in_the_gold_search_is_no_error(client, campaign, manager):
    client.force_login(manager)
    for wanted in (HUGE, "²", "-1"):
        response = client.get("/campaigns/bounds/gold/", {"solution": wanted}, follow=True)
        assert response.status_code == 200
        assert "has no solution" in response.content.decode()


def _lease(annotator):
    api = api_client_for(annotator)
    assignment = api.post("/api/campaigns/bounds/next/").json()["assignment"]
    return api, assignment["id"]


def test_submit_times_past_the_database_integers_are_clamped(campaign, annotator):
    make_solution(campaign=campaign)
    api, pk = _lease(annotator)
    response = api.post(
        f"/api/assignments/{pk}/submit/",
        {
            "submission_key": "k1",
            "ratings": [1, 1, 1],
            "total_time_ms": 2**31,
            "step_times_ms": [2**31, 10**30, 5],
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    assignment = Assignment.objects.get(pk=pk)
    assert assignment.total_time_ms == 4 * 60 * 60 * 1000
    times = list(
        StepLabel.objects.filter(assignment=assignment)
        .order_by("step__index")
        .values_list("time_spent_ms", flat=True)
    )
    assert times == [30 * 60 * 1000, 30 * 60 * 1000, 5]


def test_a_flags_list_longer_than_the_solution_is_refused_before_its_items(campaign, annotator):
    make_solution(campaign=campaign)
    api, pk = _lease(annotator)
    response = api.post(
        f"/api/assignments/{pk}/submit/",
        {"submission_key": "k2", "ratings": [1, 1, 1], "flags": [0] * 50},
        format="json",
    )
    assert response.status_code == 400
    assert "flags" in response.json()
    assert "3 steps; 50 flags" in str(response.json())
    assert Assignment.objects.get(pk=pk).status == Assignment.Status.LEASED


def test_a_list_past_any_solution_is_refused_on_its_length_alone(campaign, annotator, settings):
    settings.STEPWISE_IMPORT_MAX_STEPS = 10
    make_solution(campaign=campaign)
    api, pk = _lease(annotator)
    response = api.post(
        f"/api/assignments/{pk}/submit/",
        {"submission_key": "k3", "flags": ["not a number"] * 11},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {"flags": ["At most 10 items, not 11."]}


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"submission_key": "a\\u0000b"}', "submission_key"),
        ('{"submission_key": "a\\ud800b"}', "submission_key"),
        ('{"submission_key": "k", "flags": ' + "[" * 5000 + "]" * 5000 + "}", "nested"),
        ('{"submission_key": "k", "total_time_ms": NaN}', "JSON parse error"),
    ],
)
def test_json_bodies_no_field_can_store_are_a_400(campaign, annotator, body, where):
    make_solution(campaign=campaign)
    api, pk = _lease(annotator)
    response = api.generic(
        "POST", f"/api/assignments/{pk}/submit/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert where in response.json()["detail"]


def test_a_non_finite_score_already_stored_reads_as_null(campaign, manager, tmp_path):
    """Rows written before imports refused NaN and infinities: the API and the prm800k export
    still answer strict JSON (SQLite keeps infinities; PostgreSQL keeps NaN too)."""
    import json

    from exports.formats import write_export
    from labeling.models import Solution

    solution = make_solution(campaign=campaign, pre_generated=True)
    make_labelled(solution=solution, ratings=[1, 1, 1])
    Solution.objects.filter(pk=solution.pk).update(verifier_score=float("inf"))
    api = api_client_for(manager)
    listed = api.get("/api/campaigns/bounds/solutions/")
    assert listed.status_code == 200
    assert listed.json()["results"][0]["verifier_score"] is None
    one = api.get(f"/api/campaigns/bounds/solutions/{solution.pk}/")
    assert one.status_code == 200 and one.json()["verifier_score"] is None
    manifest = write_export(campaign=campaign, fmt="prm800k", out=tmp_path / "out.jsonl")
    for entry in manifest["files"]:
        for line in (tmp_path / entry["name"]).read_text().splitlines():
            record = json.loads(line, parse_constant=lambda name: pytest.fail(name))
            assert record["question"]["pre_generated_verifier_score"] is None

"""Who may read what over the API: annotators never see other campaigns, others' labels, gold
labels or exports; a manager of campaign A sees nothing of campaign B."""

from __future__ import annotations

import pytest

from exports.models import Export
from labeling.models import Membership
from tests.factories import (
    api_client_for,
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db
MANAGER = Membership.Role.MANAGER
REVIEWER = Membership.Role.REVIEWER


@pytest.fixture
def world():
    a, b = make_campaign(slug="alpha"), make_campaign(slug="beta")
    manager_a = make_member(campaign=a, role=MANAGER).user
    manager_b = make_member(campaign=b, role=MANAGER).user
    annotator = make_member(campaign=a).user
    other = make_member(campaign=a).user
    solution = make_solution(campaign=a)
    gold = make_gold_solution(campaign=a, kind="qc", gold=[1, -1])
    others_work = make_labelled(solution=solution, ratings=[1, 1, -1], annotator=other)
    b_solution = make_solution(campaign=b)
    make_labelled(solution=b_solution, ratings=[1, 1, 1], annotator=manager_b)
    export_a = Export.objects.create(campaign=a, format="trl")
    export_b = Export.objects.create(campaign=b, format="trl")
    return {
        "a": a,
        "b": b,
        "manager_a": manager_a,
        "manager_b": manager_b,
        "annotator": annotator,
        "other": other,
        "solution": solution,
        "gold": gold,
        "others_work": others_work,
        "b_solution": b_solution,
        "export_a": export_a,
        "export_b": export_b,
    }


def campaign_urls(slug: str, w: dict, *, solution, export) -> list[str]:
    base = f"/api/campaigns/{slug}/"
    return [
        base + "problems/",
        base + f"problems/{solution.problem_id}/",
        base + "solutions/",
        base + f"solutions/{solution.pk}/",
        base + "labels/",
        base + "exports/",
        base + f"exports/{export.pk}/",
        base + "imports/",
    ]


def test_an_annotator_cannot_browse_labels_gold_solutions_or_exports(world):
    client = api_client_for(world["annotator"])
    for url in campaign_urls("alpha", world, solution=world["gold"], export=world["export_a"]):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "gold" not in response.content.decode()
    assert client.post("/api/campaigns/alpha/exports/", {"format": "trl"}).status_code == 403
    assert not Export.objects.filter(created_by=world["annotator"]).exists()
    # Their own campaign is readable, without anything of anyone else's.
    assert client.get("/api/campaigns/alpha/").json()["role"] == "annotator"


def test_an_annotator_cannot_read_another_annotators_assignment(world):
    client = api_client_for(world["annotator"])
    response = client.get(f"/api/assignments/{world['others_work'].pk}/")
    assert response.status_code == 404
    assert client.post(f"/api/assignments/{world['others_work'].pk}/skip/").status_code == 404


def test_an_annotator_never_gets_gold_ratings_from_the_queue(world):
    client = api_client_for(world["annotator"])
    seen = []
    for _ in range(3):
        body = client.post("/api/campaigns/alpha/next/").json()
        if body["assignment"] is None:
            break
        seen.append(body["assignment"])
        text = str(body)
        assert "gold" not in text and "kind" not in text
        client.post(f"/api/assignments/{body['assignment']['id']}/skip/")
    assert seen


def test_an_annotator_cannot_see_another_campaign(world):
    client = api_client_for(world["annotator"])
    assert [c["slug"] for c in client.get("/api/campaigns/").json()["results"]] == ["alpha"]
    assert client.get("/api/campaigns/beta/").status_code == 404
    assert client.post("/api/campaigns/beta/next/").status_code == 404
    for url in campaign_urls("beta", world, solution=world["b_solution"], export=world["export_b"]):
        assert client.get(url).status_code == 404, url


def test_a_manager_of_one_campaign_sees_nothing_of_another(world):
    client = api_client_for(world["manager_a"])
    for url in campaign_urls("beta", world, solution=world["b_solution"], export=world["export_b"]):
        assert client.get(url).status_code == 404, url
    # Objects of B under A's slug are not found either.
    assert (
        client.get(f"/api/campaigns/alpha/solutions/{world['b_solution'].pk}/").status_code == 404
    )
    assert client.get(f"/api/campaigns/alpha/exports/{world['export_b'].pk}/").status_code == 404
    assert client.patch("/api/campaigns/beta/", {"overlap": 5}, format="json").status_code == 404
    labels = client.get("/api/campaigns/alpha/labels/").json()["results"]
    assert {label["annotator"] for label in labels} == {world["other"].pk}


def test_a_manager_sees_everything_of_their_campaign(world):
    client = api_client_for(world["manager_a"])
    for url in campaign_urls("alpha", world, solution=world["gold"], export=world["export_a"]):
        assert client.get(url).status_code == 200, url
    detail = client.get(f"/api/campaigns/alpha/solutions/{world['gold'].pk}/").json()
    assert [s["gold_rating"] for s in detail["steps"]] == [1, -1]


def test_a_reviewer_reads_labels_but_not_exports_or_settings(world):
    reviewer = make_member(campaign=world["a"], role=REVIEWER).user
    client = api_client_for(reviewer)
    assert client.get("/api/campaigns/alpha/labels/").status_code == 200
    assert client.get("/api/campaigns/alpha/solutions/").status_code == 200
    assert client.get("/api/campaigns/alpha/exports/").status_code == 403
    assert client.patch("/api/campaigns/alpha/", {"overlap": 5}, format="json").status_code == 403


def test_without_credentials_everything_is_401():
    from rest_framework.test import APIClient

    for url in ("/api/campaigns/", "/api/tokens/", "/api/campaigns/x/labels/"):
        assert APIClient().get(url).status_code == 401


def test_a_removed_member_loses_access(world):
    membership = Membership.objects.get(user=world["manager_a"], campaign=world["a"])
    membership.status = Membership.Status.REMOVED
    membership.save()
    client = api_client_for(world["manager_a"])
    assert client.get("/api/campaigns/alpha/labels/").status_code == 404
    assert client.get("/api/campaigns/").json()["results"] == []


def test_site_admins_see_every_campaign():
    admin = make_user(is_superuser=True, is_staff=True)
    make_campaign(slug="one"), make_campaign(slug="two")
    slugs = {c["slug"] for c in api_client_for(admin).get("/api/campaigns/").json()["results"]}
    assert {"one", "two"} <= slugs

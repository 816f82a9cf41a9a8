"""The data browser's pages (labeling/curation/views.py), the filtered API solution list, and
exports of a selection from the page and the API."""

from __future__ import annotations

import csv

import pytest
from django.urls import reverse

from exports.models import Export
from exports.services import export_run
from labeling.curation.selectors import facet_counts
from labeling.models import Membership, Solution, SolutionBulkAction, Step
from labeling.scores import step_scorer_register, step_scorer_unregister
from tests.factories import (
    api_client_for,
    make_campaign,
    make_labelled,
    make_member,
    make_problem,
    make_review,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def campaign():
    return make_campaign(slug="browse")


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role=Membership.Role.MANAGER).user


@pytest.fixture
def data(campaign):
    """A wrong-answer solution with a negative step labelled by two annotators, and others."""
    alice, bob = make_user(username="alice"), make_user(username="bob")
    for user in (alice, bob):
        make_member(campaign=campaign, user=user)
    problem = make_problem(campaign=campaign, text="Compute the hypotenuse of the triangle.")
    target = make_solution(
        campaign=campaign,
        problem=problem,
        steps=["Use Pythagoras: $a^2+b^2=c^2$.", "So $c = 7$.", "# Answer 7"],
        answer="7",
        answer_is_correct=False,
        generator="gen-a",
    )
    first = make_labelled(solution=target, ratings=[1, -1], annotator=alice,
                          human_completions={1: "So $c = 5$."})  # fmt: skip
    make_labelled(solution=target, ratings=[1, 0, 1], annotator=bob)
    right = make_solution(campaign=campaign, problem=problem, answer="5", answer_is_correct=True)
    make_labelled(solution=right, ratings=[1, 1, 1], annotator=alice)
    other = make_solution(campaign=campaign, answer="3", answer_is_correct=False)
    make_review(assignment=first)
    return {"target": target, "right": right, "other": other, "alice": alice, "bob": bob}


def _browse(client, campaign, query=""):
    return client.get(reverse("labeling:browser", kwargs={"slug": campaign.slug}) + query)


def test_the_browser_searches_and_filters_from_the_query_string(client, campaign, manager, data):
    client.force_login(manager)
    response = _browse(client, campaign, "?q=hypotenuse&answer=wrong&negative=true")
    assert response.status_code == 200
    page = response.content.decode()
    assert f'id="solution-{data["target"].pk}"' in page
    assert f'id="solution-{data["right"].pk}"' not in page
    assert f'id="solution-{data["other"].pk}"' not in page
    assert "<strong>1</strong> solution match" in page
    # The form shows the filters it was given, so the view can be changed from there.
    assert 'value="hypotenuse"' in page


def test_the_facets_count_the_matches_in_one_grouped_query(
    client, campaign, manager, data, django_assert_max_num_queries
):
    client.force_login(manager)
    page = _browse(client, campaign, "?q=hypotenuse").content.decode()
    assert 'value="wrong"> wrong <span class="facet-count">(1)</span>' in page
    assert 'value="right"> right <span class="facet-count">(1)</span>' in page
    assert 'value="ungraded"> ungraded <span class="facet-count">(0)</span>' in page
    assert 'value="regular"> regular <span class="facet-count">(2)</span>' in page
    with django_assert_max_num_queries(1):
        counts = facet_counts(Solution.objects.filter(campaign=campaign))
    assert counts == {"kind": {"regular": 3}, "answer": {"wrong": 2, "right": 1}}


def test_a_broken_filter_is_explained_not_a_crash(client, campaign, manager):
    client.force_login(manager)
    response = _browse(client, campaign, "?prm_min=lots")
    assert response.status_code == 400
    assert "prm_min must be a number" in response.content.decode()


def test_reviewers_browse_but_get_no_actions(client, campaign, data):
    reviewer = make_member(campaign=campaign, role=Membership.Role.REVIEWER).user
    client.force_login(reviewer)
    page = _browse(client, campaign).content.decode()
    assert f'id="solution-{data["target"].pk}"' in page
    assert 'name="action"' not in page


def test_the_item_page_shows_every_annotators_ratings_side_by_side(client, campaign, manager, data):
    client.force_login(manager)

    def scores(**payload):
        return [0.9, 0.2, 0.5] if payload["solution_id"] == data["target"].pk else None

    step_scorer_register("Test PRM", scores)
    try:
        url = reverse(
            "labeling:browser-item", kwargs={"slug": campaign.slug, "pk": data["target"].pk}
        )
        response = client.get(url)
    finally:
        step_scorer_unregister("Test PRM")
    assert response.status_code == 200
    page = response.content.decode()
    header = page[page.index("<thead>") : page.index("</thead>")]
    assert header.index("alice") < header.index("bob")
    step_2 = page[page.index('id="step-1"') :]
    step_2 = step_2[: step_2.index("</tr>")]
    assert "−1" in step_2 and ">0" in step_2  # alice's -1 and bob's 0 in one row
    assert "Correction: So $c = 5$." in page or "Correction: So" in page
    assert "0.200" in step_2  # the PRM's score of the step
    assert "accepted" in header
    assert "served" in page and "submitted" in page  # history


def test_annotators_never_see_the_browser_or_others_labels(client, campaign, data):
    client.force_login(data["alice"])
    assert _browse(client, campaign).status_code == 403
    url = reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": data["target"].pk})
    assert client.get(url).status_code == 403


def test_make_gold_from_one_annotators_ratings_or_the_consensus(client, campaign, manager, data):
    client.force_login(manager)
    target = data["target"]
    url = reverse("labeling:browser-item-action", kwargs={"slug": campaign.slug, "pk": target.pk})
    bob_assignment = target.assignments.get(annotator=data["bob"])
    response = client.post(url, {"action": "gold", "kind": "qc", "source": str(bob_assignment.pk)})
    assert response.status_code == 302
    target.refresh_from_db()
    assert target.kind == "qc"
    gold = list(
        Step.objects.filter(solution=target).order_by("index").values_list("gold_rating", flat=True)
    )
    assert gold == [1, 0, 1]
    client.post(url, {"action": "gold", "kind": "screening", "source": "consensus"})
    gold = list(
        Step.objects.filter(solution=target).order_by("index").values_list("gold_rating", flat=True)
    )
    assert gold == [1, -1, 1]  # a tie at step 2 goes to the more negative rating
    assert target.events.filter(action="made_gold").count() == 2


def test_item_actions_archive_restore_requeue_and_ground_truth(client, campaign, manager, data):
    client.force_login(manager)
    other = data["other"]
    url = reverse("labeling:browser-item-action", kwargs={"slug": campaign.slug, "pk": other.pk})
    client.post(url, {"action": "archive"})
    other.refresh_from_db()
    assert (other.archived, other.is_open) == (True, False)
    client.post(url, {"action": "restore"})
    client.post(url, {"action": "requeue"})
    other.refresh_from_db()
    assert (other.archived, other.extra_labels, other.is_open) == (False, 1, True)
    client.post(url, {"action": "ground_truth", "ground_truth_answer": "3"})
    other.refresh_from_db()
    assert (other.problem.ground_truth_answer, other.answer_is_correct) == ("3", True)
    assert client.post(url, {"action": "explode"}).status_code == 400
    history = client.get(
        reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": other.pk})
    ).content.decode()
    for what in ("archived", "restored", "requeued", "ground truth edited"):
        assert what in history


def test_bulk_requeue_of_all_matching_and_of_ticked_solutions(client, campaign, manager, data):
    client.force_login(manager)
    url = reverse("labeling:browser-action", kwargs={"slug": campaign.slug})
    response = client.post(url, {"action": "requeue", "scope": "all", "query": "answer=wrong"})
    job = SolutionBulkAction.objects.get()
    assert response.status_code == 302 and f"job={job.pk}" in response["Location"]
    assert (job.status, job.changed, job.selection) == ("done", 2, {"answer": ["wrong"]})
    extra = dict(Solution.objects.values_list("pk", "extra_labels"))
    assert extra == {data["target"].pk: 1, data["right"].pk: 0, data["other"].pk: 1}
    client.post(url, {"action": "archive", "scope": "selected", "id": [data["right"].pk]})
    assert list(Solution.objects.filter(archived=True)) == [data["right"]]
    refused = client.post(url, {"action": "archive", "scope": "selected"})
    assert refused.status_code == 302 and Solution.objects.filter(archived=True).count() == 1


def test_a_bulk_action_returns_to_the_page_with_its_sort(client, campaign, manager, data):
    client.force_login(manager)
    page = client.get(
        reverse("labeling:browser", kwargs={"slug": campaign.slug}) + "?answer=wrong&sort=prm"
    ).content.decode()
    assert '<input type="hidden" name="sort" value="prm">' in page
    url = reverse("labeling:browser-action", kwargs={"slug": campaign.slug})
    response = client.post(
        url, {"action": "requeue", "scope": "all", "query": "answer=wrong", "sort": "prm"}
    )
    job = SolutionBulkAction.objects.get()
    assert response["Location"].endswith(f"?answer=wrong&sort=prm&job={job.pk}")


def test_the_bulk_job_is_followed_by_polling(client, campaign, manager):
    client.force_login(manager)
    job = SolutionBulkAction.objects.create(campaign=campaign, action="requeue", total=10)
    url = reverse(
        "labeling:job-status", kwargs={"slug": campaign.slug, "kind": "bulk_actions", "pk": job.pk}
    )
    page = client.get(reverse("labeling:browser", kwargs={"slug": campaign.slug}), {"job": job.pk})
    assert f'hx-get="{url}?state=pending"' in page.content.decode()
    response = client.get(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    body = response.content.decode()
    assert 'hx-trigger="every 2s"' in body and "waiting for a worker" in body


def test_export_exactly_the_selection_from_the_page(client, campaign, manager, data):
    client.force_login(manager)
    url = reverse("labeling:browser-action", kwargs={"slug": campaign.slug})
    response = client.post(url, {"action": "export", "scope": "all", "query": "answer=wrong"})
    assert response.status_code == 302
    export_page = client.get(response["Location"])
    assert "Exports only the selection" in export_page.content.decode()
    selection = export_page.context["form"].initial["selection"]
    client.post(
        reverse("exports:list", kwargs={"slug": campaign.slug}),
        {"format": "csv", "selection": selection, "neutral": "positive", "annotators": "each",
         "math500": "ignore", "test_fraction": "0", "split_seed": "0",
         "annotator_ids": "pseudonym"},
    )  # fmt: skip
    export = Export.objects.get()
    assert export.selection == {"answer": ["wrong"]}
    export_run(export=export)
    with open(export.directory / export.files[0]["name"]) as f:
        rows = list(csv.DictReader(f))
    assert {int(r["solution_id"]) for r in rows} == {data["target"].pk}  # "other" has no labels


def test_the_api_lists_solutions_with_the_same_filters(campaign, manager, data):
    api = api_client_for(manager)
    base = f"/api/campaigns/{campaign.slug}/solutions/"
    body = api.get(base + "?answer=wrong&negative=true&q=hypotenuse").json()
    assert [s["id"] for s in body["results"]] == [data["target"].pk]
    ordered = api.get(base + "?sort=newest&page_size=2").json()
    newest = sorted((data["target"].pk, data["right"].pk, data["other"].pk), reverse=True)
    assert [s["id"] for s in ordered["results"]] == newest[:2]
    rest = api.get(ordered["next"]).json()
    assert [s["id"] for s in rest["results"]] == newest[2:]
    Solution.objects.filter(pk=data["other"].pk).update(is_open=False, priority=9)
    queue = [s["id"] for s in api.get(base + "?sort=queue&page_size=2").json()["results"]]
    assert data["other"].pk not in queue  # what the queue serves next comes first
    bad = api.get(base + "?state=gone")
    assert bad.status_code == 400 and "state" in bad.json()
    schema = api.get("/api/schema/?format=json").json()
    params = {
        p["name"] for p in schema["paths"]["/api/campaigns/{slug}/solutions/"]["get"]["parameters"]
    }
    assert {"q", "kind", "state", "answer", "negative", "disagree", "prm_min", "sort"} <= params


def test_the_export_api_accepts_a_selection(campaign, manager, data):
    api = api_client_for(manager)
    url = f"/api/campaigns/{campaign.slug}/exports/"
    response = api.post(
        url, {"format": "csv", "selection": {"id": [str(data["right"].pk)]}}, format="json"
    )
    assert response.status_code == 202, response.json()
    assert response.json()["selection"] == {"id": [str(data["right"].pk)]}
    bad = api.post(url, {"format": "csv", "selection": {"kind": "nope"}}, format="json")
    assert bad.status_code == 400 and "selection" in bad.json()

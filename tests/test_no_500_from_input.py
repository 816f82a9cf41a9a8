"""No 500 from input (issue 24): every field is parsed with its type and range before work
starts. The two inputs the issue found (a "make gold" whose source is ``²``, whose
``isdigit()`` is true and ``int()`` fails; a bulk action over ``id=99999999999999999999``,
accepted and failed later as a job) and the others found looking for more."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from labeling.models import SolutionBulkAction
from tests.factories import make_campaign, make_labelled, make_member, make_solution

pytestmark = pytest.mark.django_db

HUGE = "99999999999999999999"  # 20 digits: no 64-bit id


@pytest.fixture
def campaign():
    return make_campaign(slug="inputs")


@pytest.fixture
def manager(campaign):
    client = Client(raise_request_exception=False)
    client.force_login(make_member(campaign=campaign, role="manager").user)
    return client


@pytest.mark.parametrize("source", ["²", HUGE, "-1", "1.0", "١٢", ""])
def test_make_gold_from_a_source_that_is_no_id_is_400(campaign, manager, source):
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    url = reverse("labeling:browser-item-action", kwargs={"slug": campaign.slug, "pk": solution.pk})
    response = manager.post(url, {"action": "gold", "kind": "qc", "source": source})
    assert response.status_code == 400
    said = response.content.decode()
    assert ("assignment id or 'consensus'" if source else "This field is required") in said
    solution.refresh_from_db()
    assert solution.kind == "regular"


def test_make_gold_from_an_assignment_still_works(campaign, manager):
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    assignment = make_labelled(solution=solution, ratings=[1, -1])
    url = reverse("labeling:browser-item-action", kwargs={"slug": campaign.slug, "pk": solution.pk})
    response = manager.post(url, {"action": "gold", "kind": "qc", "source": str(assignment.pk)})
    assert response.status_code == 302
    solution.refresh_from_db()
    assert solution.kind == "qc"


@pytest.mark.parametrize("bad", [HUGE, "²", "-3", "1e3", "0x10", "7 8"])
def test_a_bulk_action_over_an_id_that_cannot_be_one_is_refused_in_the_form(campaign, manager, bad):
    good = make_solution(campaign=campaign)
    url = reverse("labeling:browser-action", kwargs={"slug": campaign.slug})
    body = {"action": "requeue", "scope": "selected", "id": [str(good.pk), bad]}
    response = manager.post(url, body)
    assert response.status_code == 400
    assert "is not a solution id" in response.content.decode()
    assert response["Content-Type"].startswith("text/plain")  # the value is not HTML here
    assert not SolutionBulkAction.objects.exists()  # refused before any job


def test_a_bulk_action_filter_with_an_id_out_of_range_is_refused_before_a_job(campaign, manager):
    url = reverse("labeling:browser-action", kwargs={"slug": campaign.slug})
    response = manager.post(url, {"action": "requeue", "scope": "all", "query": f"id={HUGE}"})
    assert response.status_code == 302
    assert not SolutionBulkAction.objects.exists()
    page = manager.get(response["Location"])
    assert page.status_code == 400 and "id is out of range" in page.content.decode()


@pytest.mark.parametrize(
    "path",
    [
        f"/campaigns/inputs/label/{HUGE}/rate/",
        f"/campaigns/inputs/label/{HUGE}/submit/",
        f"/campaigns/inputs/browse/{HUGE}/",
        f"/campaigns/inputs/machines/generations/{HUGE}/resume/",
        f"/campaigns/inputs/imports/{HUGE}/delete/",
    ],
)
def test_an_id_too_long_in_a_page_url_is_404(campaign, manager, path):
    assert manager.post(path).status_code == 404


def test_a_job_parameter_too_long_shows_the_browser(campaign, manager):
    url = reverse("labeling:browser", kwargs={"slug": campaign.slug})
    assert manager.get(f"{url}?job={HUGE}").status_code == 200
    assert manager.get(f"{url}?job=²").status_code == 200


def test_a_content_length_that_is_no_number_is_not_a_500(campaign, manager):
    url = reverse("imports:list", kwargs={"slug": campaign.slug})
    response = manager.post(url, {"format": "jsonl"}, CONTENT_LENGTH="abc")
    assert response.status_code == 400
    api = f"/api/campaigns/{campaign.slug}/imports/"
    assert manager.post(api, {}, CONTENT_LENGTH="12x").status_code == 400

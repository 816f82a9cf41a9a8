"""No dead ends: 403, 404 and 500 are pages of the site with a way back; the API answers JSON."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse

from common.api import handler500
from tests.factories import make_campaign, make_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def annotator(client):
    campaign = make_campaign(slug="errors")
    user = make_member(campaign=campaign).user
    client.force_login(user)
    return user


def test_an_unknown_page_is_a_styled_404_with_a_way_back(client, annotator):
    response = client.get("/no/such/page/")

    assert response.status_code == 404
    page = response.content.decode()
    assert "css/stepwise.css" in page  # the site's layout
    assert "Nothing here" in page
    assert f'href="{reverse("home")}"' in page and "Back to my campaigns" in page
    assert annotator.username in page  # the top bar, with the person logged in


def test_a_campaign_of_someone_else_is_the_same_404(client, annotator):
    make_campaign(slug="secret")

    response = client.get(reverse("labeling:campaign", kwargs={"slug": "secret"}))

    assert response.status_code == 404
    assert "Back to my campaigns" in response.content.decode()


def test_a_role_that_is_not_enough_gets_a_styled_403_saying_why(client, annotator):
    response = client.get(reverse("annotators:dashboard", kwargs={"slug": "errors"}))

    assert response.status_code == 403
    page = response.content.decode()
    assert "You may not do this" in page
    assert "Your role in this campaign does not allow this." in page
    assert "Back to my campaigns" in page


def test_an_expired_form_gets_a_page_that_says_so():
    client = Client(enforce_csrf_checks=True)

    response = client.post(reverse("login"), {"username": "x", "password": "y"})

    assert response.status_code == 403
    assert "That form has expired" in response.content.decode()


def test_a_server_error_is_a_page_of_the_site():
    response = handler500(RequestFactory().get("/campaigns/x/"))

    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong on our side" in page
    assert "Back to my campaigns" in page and "css/stepwise.css" in page


def test_the_api_keeps_answering_json(client, annotator):
    missing = client.get("/api/no-such-endpoint/")
    error = handler500(RequestFactory().get("/api/campaigns/"))

    assert missing.status_code == 404
    assert missing.json() == {"detail": "Not found.", "code": "not_found"}
    assert error.status_code == 500
    assert error["Content-Type"] == "application/json"


def test_a_permission_denied_outside_drf_under_the_api_is_json():
    from django.core.exceptions import PermissionDenied

    from common.api import handler403

    response = handler403(RequestFactory().get("/api/x/"), PermissionDenied("No."))

    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
    assert b'"permission_denied"' in response.content

"""API tokens: hashed, named, several per user, last use recorded, revoked ones refused."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotators.models import ApiToken
from tests.factories import make_campaign, make_member, make_token, make_user

pytestmark = pytest.mark.django_db


def token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_it_stores_only_the_hash_of_the_key():
    user = make_user()
    key = make_token(user=user, name="laptop")
    token = ApiToken.objects.get(user=user)
    assert key.startswith("sw_") and len(key) > 40
    assert token.key_hash == ApiToken.hash_key(key) != key
    assert key not in {token.key_hint, token.name, token.key_hash}
    assert key.startswith(token.key_hint)


def test_a_token_authenticates_and_records_its_last_use():
    user = make_user()
    key = make_token(user=user)
    response = token_client(key).get("/api/campaigns/")
    assert response.status_code == 200
    assert ApiToken.objects.get(user=user).last_used_at is not None


def test_a_revoked_token_is_refused_and_the_others_still_work():
    user = make_user()
    campaign = make_campaign()
    make_member(campaign=campaign, user=user)
    first, second = make_token(user=user, name="a"), make_token(user=user, name="b")
    client = token_client(first)
    assert client.get("/api/campaigns/").status_code == 200
    token = ApiToken.objects.get(name="a")
    revoked = token_client(second).post(f"/api/tokens/{token.pk}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    response = client.get("/api/campaigns/")
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token."}
    assert token_client(second).get("/api/campaigns/").status_code == 200


def test_a_token_created_over_the_api_is_shown_once():
    user = make_user()
    client = token_client(make_token(user=user, name="first"))
    created = client.post("/api/tokens/", {"name": "ci"}, format="json")
    assert created.status_code == 201
    key = created.json()["key"]
    assert token_client(key).get("/api/tokens/").status_code == 200
    listed = client.get("/api/tokens/").json()["results"]
    assert {t["name"] for t in listed} == {"first", "ci"}
    assert all("key" not in t for t in listed)


def test_a_nameless_or_duplicate_token_is_refused_with_a_reason():
    user = make_user()
    client = token_client(make_token(user=user, name="first"))
    assert client.post("/api/tokens/", {"name": " "}, format="json").status_code == 400
    duplicate = client.post("/api/tokens/", {"name": "first"}, format="json")
    assert duplicate.status_code == 400
    assert "already" in duplicate.json()["name"][0]


def test_nobody_revokes_someone_elses_token():
    owner, other = make_user(), make_user()
    make_token(user=owner)
    token = ApiToken.objects.get(user=owner)
    response = token_client(make_token(user=other)).post(f"/api/tokens/{token.pk}/revoke/")
    assert response.status_code == 404
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None


def test_the_profile_page_creates_lists_and_revokes_tokens(client):
    user = make_user(password="pw")
    client.force_login(user)
    page = client.get("/profile/")
    assert page.status_code == 200 and b"No tokens yet" in page.content
    created = client.post("/profile/", {"name": "notebook"})
    assert created.status_code == 200
    assert created["Cache-Control"] == "no-store"
    key = created.context["new_key"]
    assert key.encode() in created.content
    assert key.encode() not in client.get("/profile/").content  # shown once
    assert token_client(key).get("/api/campaigns/").status_code == 200
    token = ApiToken.objects.get(user=user)
    client.post(f"/profile/tokens/{token.pk}/revoke/")
    assert token_client(key).get("/api/campaigns/").status_code == 401
    assert b"revoked" in client.get("/profile/").content


def test_the_header_links_to_the_profile(client):
    client.force_login(make_user())
    assert b'href="/profile/"' in client.get("/campaigns/").content


def test_the_profile_needs_csrf(client):
    from django.test import Client

    user = make_user()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post("/profile/", {"name": "x"}).status_code == 403
    assert not ApiToken.objects.exists()


def test_the_command_prints_a_working_key(capsys):
    make_user(username="scripts")
    call_command("create_api_token", "scripts", "--name", "nightly")
    key = capsys.readouterr().out.strip()
    assert token_client(key).get("/api/campaigns/").status_code == 200
    assert ApiToken.objects.get().name == "nightly"


def test_the_command_names_an_unknown_user():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No user named 'ghost'"):
        call_command("create_api_token", "ghost")


def test_authentication_is_one_query_once_the_last_use_is_fresh(django_assert_num_queries):
    from annotators.authentication import TokenAuthentication

    user = make_user()
    key = make_token(user=user)
    auth = TokenAuthentication()
    with django_assert_num_queries(2):  # the lookup, and the first last-used time
        assert auth.authenticate_credentials(key)[0] == user
    with django_assert_num_queries(1):  # within a minute: the lookup only
        found, token = auth.authenticate_credentials(key)
    assert found == user and token.pk == ApiToken.objects.get().pk

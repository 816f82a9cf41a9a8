"""Logins and API tokens under guessing: 429 on the admin login too, windows that slide rather
than reset, wrong tokens throttled per address, proxies trusted only as configured; people change
their password, and reset it by email where email is configured."""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client

from common import throttle
from labeling.models import Membership
from tests.factories import make_campaign, make_member, make_token, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch):
    """The throttle's clock, set by the test."""
    now = {"t": 1_000_000 * 900.0}
    monkeypatch.setattr(throttle.time, "time", lambda: now["t"])
    return now


def test_the_admin_login_answers_429_once_throttled(settings):
    settings.STEPWISE_LOGIN_FAILURES = 2
    make_user(username="root", password="right", is_staff=True, is_superuser=True)
    client = Client()
    for _ in range(2):
        assert (
            client.post("/admin/login/", {"username": "root", "password": "x"}).status_code == 200
        )
    response = client.post("/admin/login/", {"username": "root", "password": "right"})
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()


def test_failures_do_not_all_expire_when_a_window_turns_over(settings, clock):
    settings.STEPWISE_LOGIN_FAILURES = 3
    settings.STEPWISE_LOGIN_WINDOW = 900
    make_user(username="dave", password="right")
    client = Client()
    clock["t"] += 890  # the last seconds of a fixed window
    for _ in range(3):
        client.post("/login/", {"username": "dave", "password": "wrong"})
    clock["t"] += 20  # a fixed window would have reset here
    blocked = client.post("/login/", {"username": "dave", "password": "right"})
    assert blocked.status_code == 429
    clock["t"] += 900  # a whole window later they have aged out
    assert client.post("/login/", {"username": "dave", "password": "right"}).status_code == 302


def test_the_wait_shown_is_when_the_next_attempt_is_accepted(settings, clock):
    counter = throttle.FailureCounter({"k": 2}, window=100)
    counter.failed()
    counter.failed()
    wait = counter.blocked_for()
    assert wait is not None
    clock["t"] += wait
    assert throttle.FailureCounter({"k": 2}, window=100).blocked_for() is None


def test_the_forwarded_address_counts_only_behind_a_configured_proxy(settings):
    settings.STEPWISE_LOGIN_FAILURES = 1  # 5 per address
    make_user(username="erin", password="right")
    for i in range(5):  # a client that makes up X-Forwarded-For per request
        Client(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR=f"1.2.3.{i}").post(
            "/login/", {"username": f"g{i}", "password": "x"}
        )
    spoofing = Client(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="9.9.9.9")
    assert spoofing.post("/login/", {"username": "erin", "password": "right"}).status_code == 429
    settings.STEPWISE_TRUSTED_PROXY_HOPS = 1
    behind = Client(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="9.9.9.9")
    assert behind.post("/login/", {"username": "erin", "password": "right"}).status_code == 302


def test_wrong_api_tokens_are_throttled_per_address(settings, client):
    """Past the limit, wrong tokens from an address are answered 429; a valid token from the
    same address is still served (issue 24: it used to get 429 too, for the whole window)."""
    settings.STEPWISE_LOGIN_FAILURES = 1  # 5 wrong tokens per address
    campaign = make_campaign(slug="tok")
    user = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    key = make_token(user=user)
    for i in range(5):
        wrong = client.get("/api/campaigns/", HTTP_AUTHORIZATION=f"Token wrong{i}")
        assert wrong.status_code == 401
    blocked = client.get("/api/campaigns/", HTTP_AUTHORIZATION="Token wrong-again")
    assert blocked.status_code == 429
    assert "Retry-After" in blocked.headers and blocked.json()["detail"]
    assert client.get("/api/campaigns/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    other = Client(REMOTE_ADDR="10.1.1.1")
    assert other.get("/api/campaigns/", HTTP_AUTHORIZATION="Token wrong0").status_code == 401
    # Requests without a token (session users) are not affected.
    client.force_login(user)
    assert client.get("/api/campaigns/").status_code == 200


def test_a_user_changes_their_password_from_the_profile(client):
    user = make_user(username="frank", password="old-password-1")
    client.force_login(user)
    profile = client.get("/profile/").content.decode()
    assert 'href="/password/"' in profile
    response = client.post(
        "/password/",
        {
            "old_password": "old-password-1",
            "new_password1": "a-much-better-one-42",
            "new_password2": "a-much-better-one-42",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/password/changed/"
    user.refresh_from_db()
    assert user.check_password("a-much-better-one-42")
    assert client.get("/password/changed/").status_code == 200


def test_changing_a_password_needs_a_login(client):
    response = client.get("/password/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_reset_by_email_is_off_without_email(client, settings):
    settings.EMAIL_HOST = ""
    assert client.get("/password/reset/").status_code == 404
    assert "Forgot your password" not in client.get("/login/").content.decode()


def test_reset_by_email_sends_a_working_link(client, settings):
    settings.EMAIL_HOST = "smtp.example.org"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    user = make_user(username="gina", password="old-password-1", email="gina@example.org")
    assert "Forgot your password" in client.get("/login/").content.decode()
    response = client.post("/password/reset/", {"email": "gina@example.org"})
    assert response.status_code == 302
    (message,) = mail.outbox
    link = next(w for w in message.body.split() if "/password/reset/" in w)
    path = link.split("://", 1)[1].split("/", 1)[1]
    form = client.get("/" + path, follow=True)
    assert form.status_code == 200
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "brand-new-secret-77", "new_password2": "brand-new-secret-77"},
    )
    assert done.status_code == 302
    user.refresh_from_db()
    assert user.check_password("brand-new-secret-77")

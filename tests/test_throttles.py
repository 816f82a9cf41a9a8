"""Throttles that tell a guesser from a user (issue 24): wrong tokens do not lock out a valid
one, the password-change form counts wrong old passwords as failed logins (the same count), a
browser that has logged in keeps its own count (device cookie), and behind a proxy the
forwarded address counts only as the operator configured it."""

from __future__ import annotations

import pytest
from django.test import Client

from labeling.models import Membership
from stepwise.security import DEVICE_COOKIE
from tests.factories import make_campaign, make_member, make_token, make_user

pytestmark = pytest.mark.django_db

PROXY = "10.0.0.2"  # every request through a reverse proxy the app was not told about


def _login(client: Client, username: str, password: str) -> int:
    return client.post("/login/", {"username": username, "password": password}).status_code


def test_200_wrong_tokens_leave_a_valid_token_served(settings):
    """As in the issue: 200 wrong tokens from one address (here: a proxy's, with the default
    settings, so every API user shares it), then the right token."""
    assert settings.STEPWISE_LOGIN_FAILURES == 5  # the default: 25 wrong tokens per address
    campaign = make_campaign(slug="tokens")
    user = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    key = make_token(user=user)
    guesser = Client(REMOTE_ADDR=PROXY)
    answers = [
        guesser.get("/api/campaigns/", HTTP_AUTHORIZATION=f"Token sw_guess{i}").status_code
        for i in range(200)
    ]
    assert answers == [401] * 25 + [429] * 175
    script = Client(REMOTE_ADDR=PROXY)
    served = script.get("/api/campaigns/", HTTP_AUTHORIZATION=f"Token {key}")
    assert served.status_code == 200
    assert [c["slug"] for c in served.json()["results"]] == ["tokens"]


def _change(client: Client, old: str, new: str = "a-much-better-one-42") -> int:
    return client.post(
        "/password/", {"old_password": old, "new_password1": new, "new_password2": new}
    ).status_code


def test_the_password_change_form_locks_after_the_same_count_as_login(settings):
    settings.STEPWISE_LOGIN_FAILURES = 5
    user = make_user(username="hana", password="old-password-1")
    thief = Client(REMOTE_ADDR="10.9.9.9")
    thief.force_login(user)  # a session taken, not the password
    assert [_change(thief, f"guess-{i}") for i in range(5)] == [200] * 5
    blocked = thief.post(
        "/password/",
        {
            "old_password": "old-password-1",
            "new_password1": "stolen-account-77",
            "new_password2": "stolen-account-77",
        },
    )
    assert blocked.status_code == 429
    assert "Too many wrong passwords. Try again in" in blocked.content.decode()
    user.refresh_from_db()
    assert user.check_password("old-password-1")
    # The same count as logins: the login door is shut for that name too (no switching doors).
    assert _login(Client(REMOTE_ADDR="10.9.9.8"), "hana", "old-password-1") == 429


def test_login_and_password_change_share_one_count(settings):
    settings.STEPWISE_LOGIN_FAILURES = 5
    user = make_user(username="ines", password="old-password-1")
    guesser = Client(REMOTE_ADDR="10.8.8.8")
    for i in range(3):
        assert _login(guesser, "ines", f"wrong-{i}") == 200
    session = Client(REMOTE_ADDR="10.8.8.7")
    session.force_login(user)
    assert [_change(session, f"wrong-{i}") for i in range(2)] == [200, 200]
    assert _change(session, "old-password-1") == 429  # 3 + 2 = the login limit


def test_a_browser_that_logged_in_before_is_not_locked_out_by_a_guesser(settings):
    """Behind a proxy with the default settings every client shares its address: a guesser
    who spends the address's and the username's limits locks out newcomers, not the people
    whose browsers have logged in before."""
    settings.STEPWISE_LOGIN_FAILURES = 2  # 10 per address
    make_user(username="jo", password="right-password-1")
    mine = Client(REMOTE_ADDR=PROXY)
    assert _login(mine, "jo", "right-password-1") == 302
    assert DEVICE_COOKIE in mine.cookies
    mine.post("/logout/")
    guesser = Client(REMOTE_ADDR=PROXY)
    for i in range(10):
        guesser.post("/login/", {"username": ["jo", f"other{i}"][i % 2], "password": "x"})
    assert _login(guesser, "jo", "right-password-1") == 429
    assert _login(Client(REMOTE_ADDR=PROXY), "jo", "right-password-1") == 429  # a newcomer
    assert _login(mine, "jo", "right-password-1") == 302
    # The device's own count still stops guessing from it.
    mine.post("/logout/")
    assert [_login(mine, "jo", f"wrong-{i}") for i in range(3)] == [200, 200, 429]


def test_a_device_cookie_counts_only_for_the_user_it_was_given_for(settings):
    settings.STEPWISE_LOGIN_FAILURES = 1
    make_user(username="kim", password="right-password-1")
    make_user(username="lee", password="right-password-2")
    browser = Client(REMOTE_ADDR="10.7.7.7")
    assert _login(browser, "kim", "right-password-1") == 302
    browser.post("/logout/")
    assert _login(Client(REMOTE_ADDR="10.7.7.6"), "lee", "wrong") == 200
    assert _login(browser, "lee", "right-password-2") == 429  # lee's own count, spent
    browser.cookies[DEVICE_COOKIE] = "forged"
    assert _login(browser, "lee", "right-password-2") == 429


def test_the_forwarded_address_is_believed_only_from_the_listed_proxies(settings):
    settings.STEPWISE_LOGIN_FAILURES = 1  # 5 per address
    settings.STEPWISE_TRUSTED_PROXY_HOPS = 1
    settings.STEPWISE_TRUSTED_PROXIES = ["10.0.0.0/24"]
    make_user(username="max", password="right-password-1")
    # Straight to the app, making up a new X-Forwarded-For each time: one address all along.
    for i in range(5):
        Client(REMOTE_ADDR="192.0.2.9", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}").post(
            "/login/", {"username": f"g{i}", "password": "x"}
        )
    direct = Client(REMOTE_ADDR="192.0.2.9", HTTP_X_FORWARDED_FOR="198.51.100.77")
    assert _login(direct, "max", "right-password-1") == 429
    # Through the proxy, that client's address is its own.
    proxied = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.77")
    assert _login(proxied, "max", "right-password-1") == 302
    # A forwarded value that is no address counts as the proxy's.
    from django.test import RequestFactory

    from common.throttle import client_ip

    garbled = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="<script>")
    assert client_ip(garbled) == "10.0.0.2"
    v6 = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="[2001:db8::1]")
    assert client_ip(v6) == "2001:db8::1"

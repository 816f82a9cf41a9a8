"""Security hardening: CSP, no inline script, production settings, throttled login, upload
limits, CSRF on session-authenticated API writes."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from imports.models import ImportJob
from labeling.models import Campaign, Membership
from tests.factories import (
    api_client_for,
    make_campaign,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[1]


# --- Content Security Policy and inline code ---------------------------------------------------


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="secure", instructions="Rate <b>every</b> step.")
    make_solution(campaign=campaign, steps=["$x^2$ <script>alert(1)</script>", "Done."])
    return campaign


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role=Membership.Role.MANAGER).user


@pytest.fixture
def annotator(campaign):
    return make_member(campaign=campaign).user


def main_pages(slug: str) -> list[str]:
    base = f"/campaigns/{slug}/"
    return [
        "/",
        "/campaigns/",
        "/campaigns/new/",
        "/profile/",
        base,
        base + "settings/",
        base + "imports/",
        base + "members/",
        base + "invitations/",
        base + "gold/",
        base + "dashboard/",
        base + "agreement/",
        base + "reviews/",
        base + "exports/",
        base + "active-learning/",
        base + "label/",
        "/api/docs/",
    ]


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)
STYLE_ATTR = re.compile(r"<[^>]+\sstyle\s*=", re.I)
STYLE_TAG = re.compile(r"<style\b", re.I)


def test_every_response_carries_a_policy_without_inline_script(client):
    response = client.get("/login/")
    policy = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "Content-Security-Policy" in APIClient().get("/api/campaigns/")


def test_the_main_pages_have_no_inline_script_handler_or_style(client, campaign, manager):
    client.force_login(manager)
    for url in main_pages(campaign.slug):
        response = client.get(url, follow=True)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "Content-Security-Policy" in response, url
        assert not INLINE_SCRIPT.search(html), (url, INLINE_SCRIPT.search(html))
        assert not HANDLER.search(html), (url, HANDLER.search(html))
        assert not STYLE_ATTR.search(html), (url, STYLE_ATTR.search(html))
        assert not STYLE_TAG.search(html), url


def test_the_labelling_page_has_no_inline_code(client, campaign, annotator):
    client.force_login(annotator)
    html = client.get(f"/campaigns/{campaign.slug}/label/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert not INLINE_SCRIPT.search(html)
    assert not HANDLER.search(html)
    assert not STYLE_ATTR.search(html)


def test_the_api_docs_load_swagger_from_static_files(client):
    html = client.get("/api/docs/").content.decode()
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert "/api/schema/" in script.content.decode()
    assert (ROOT / "static/vendor/swagger-ui/LICENSE").exists()


# --- Production settings -------------------------------------------------------------------------


def production_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SECURE_", "DEBUG"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "stepwise.settings",
            "STEPWISE_PRODUCTION": "true",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "stepwise.example.org,testserver",
            "DEBUG": "false",
        }
    )
    env.update(extra)
    return env


def test_check_deploy_is_clean_with_production_settings():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


PROBE = """
import django, json
django.setup()
from django.conf import settings
from django.test import Client
client = Client()
plain = client.get("/login/")
secure = client.get("/login/", secure=True)
print(json.dumps({
    "session_secure": settings.SESSION_COOKIE_SECURE,
    "csrf_secure": settings.CSRF_COOKIE_SECURE,
    "csrf_httponly": settings.CSRF_COOKIE_HTTPONLY,
    "hsts": settings.SECURE_HSTS_SECONDS,
    "plain_status": plain.status_code,
    "plain_location": plain.get("Location", ""),
    "hsts_header": secure.get("Strict-Transport-Security", ""),
    "csrf_cookie_secure": bool(secure.cookies["csrftoken"]["secure"]),
    "csp": secure.get("Content-Security-Policy", ""),
}))
"""


def test_production_cookies_are_secure_and_http_redirects_to_https():
    import json

    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe["session_secure"] and probe["csrf_secure"] and probe["csrf_httponly"]
    assert probe["hsts"] >= 31536000
    assert probe["plain_status"] == 301
    assert probe["plain_location"].startswith("https://")
    assert "max-age=31536000" in probe["hsts_header"]
    assert probe["csrf_cookie_secure"]
    assert "script-src 'self'" in probe["csp"]


def test_production_refuses_debug():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=production_env(DEBUG="true"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "DEBUG must be off" in result.stderr


def test_no_secret_key_is_in_the_repository():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [name for name in tracked if name.startswith("var/")]
    settings_text = (ROOT / "stepwise/settings.py").read_text()
    assert not re.search(r"SECRET_KEY\s*=\s*['\"]", settings_text)


# --- Login throttling ----------------------------------------------------------------------------


def test_logins_are_throttled_per_username_with_a_clear_message(settings):
    settings.STEPWISE_LOGIN_FAILURES = 3
    make_user(username="alice", password="right")
    client = Client()
    for _ in range(3):
        response = client.post("/login/", {"username": "alice", "password": "wrong"})
        assert response.status_code == 200
    blocked = client.post("/login/", {"username": "alice", "password": "right"})
    assert blocked.status_code == 429
    assert "Too many failed logins. Try again in" in blocked.content.decode()
    assert "_auth_user_id" not in client.session
    # Another name from another address is not affected.
    other = Client(REMOTE_ADDR="10.0.0.9")
    make_user(username="bob", password="right")
    assert other.post("/login/", {"username": "bob", "password": "right"}).status_code == 302


def test_logins_are_throttled_per_ip_address(settings):
    settings.STEPWISE_LOGIN_FAILURES = 2  # 10 per address
    make_user(username="carol", password="right")
    client = Client(REMOTE_ADDR="10.0.0.7")
    for i in range(10):
        client.post("/login/", {"username": f"guess{i}", "password": "wrong"})
    blocked = client.post("/login/", {"username": "carol", "password": "right"})
    assert blocked.status_code == 429
    elsewhere = Client(REMOTE_ADDR="10.0.0.8")
    assert elsewhere.post("/login/", {"username": "carol", "password": "right"}).status_code == 302


def test_the_admin_login_is_throttled_too(settings):
    settings.STEPWISE_LOGIN_FAILURES = 2
    make_user(username="root", password="right", is_staff=True, is_superuser=True)
    client = Client()
    for _ in range(2):
        client.post("/admin/login/", {"username": "root", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "root", "password": "right"})
    assert "Too many failed logins" in response.content.decode()
    assert "_auth_user_id" not in client.session


# --- Upload limits -------------------------------------------------------------------------------


def test_an_api_upload_over_the_limit_is_refused_with_a_clear_message(settings, campaign, manager):
    settings.STEPWISE_MAX_UPLOAD_MB = 1
    big = SimpleUploadedFile("big.jsonl", b"x" * (1024 * 1024 + 200_000))
    response = api_client_for(manager).post(
        f"/api/campaigns/{campaign.slug}/imports/",
        {"file": big, "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 413
    assert "uploads are limited to 1 MB (STEPWISE_MAX_UPLOAD_MB)" in response.json()["detail"]
    assert not ImportJob.objects.exists()


def test_an_api_upload_just_over_the_limit_is_refused_by_the_service(settings, campaign, manager):
    settings.STEPWISE_MAX_UPLOAD_MB = 1
    file = SimpleUploadedFile("big.jsonl", b"x" * (1024 * 1024 + 10))
    response = api_client_for(manager).post(
        f"/api/campaigns/{campaign.slug}/imports/",
        {"file": file, "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 400
    assert "limited to 1 MB" in response.json()["file"][0]


def test_a_page_upload_over_the_limit_is_refused_with_a_clear_message(
    settings, client, campaign, manager
):
    settings.STEPWISE_MAX_UPLOAD_MB = 1
    client.force_login(manager)
    big = SimpleUploadedFile("big.jsonl", b"x" * (1024 * 1024 + 200_000))
    response = client.post(f"/campaigns/{campaign.slug}/imports/", {"file": big, "format": "jsonl"})
    assert response.status_code == 413
    assert "uploads are limited to 1 MB" in response.content.decode()


def test_oversized_json_bodies_are_refused(settings, campaign, manager):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_client_for(manager).patch(
        f"/api/campaigns/{campaign.slug}/", {"instructions": "x" * 5000}, format="json"
    )
    assert response.status_code == 413
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in response.json()["detail"]


# --- CSRF ----------------------------------------------------------------------------------------


def test_session_authenticated_api_writes_need_the_csrf_token(campaign, manager):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(manager)
    refused = client.patch(f"/api/campaigns/{campaign.slug}/", {"overlap": 3}, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert Campaign.objects.get(pk=campaign.pk).overlap != 3
    page = client.get("/profile/")
    token = page.cookies["csrftoken"].value
    accepted = client.patch(
        f"/api/campaigns/{campaign.slug}/",
        {"overlap": 3},
        format="json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert accepted.status_code == 200
    # Reads and token-authenticated writes need no CSRF token.
    assert client.get(f"/api/campaigns/{campaign.slug}/").status_code == 200
    assert (
        api_client_for(manager)
        .patch(f"/api/campaigns/{campaign.slug}/", {"overlap": 2}, format="json")
        .status_code
        == 200
    )


def test_every_post_form_in_the_templates_carries_the_csrf_token():
    for path in (ROOT / "templates").rglob("*.html"):
        html = path.read_text()
        for form in re.finditer(r"<form\b[^>]*>(.*?)</form>", html, re.S | re.I):
            if re.search(r"method=\"post\"", form.group(0), re.I):
                assert "csrf_token" in form.group(1), (path, form.group(0)[:120])


def test_form_posts_without_a_csrf_token_are_refused(campaign, manager):
    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)
    response = client.post(f"/campaigns/{campaign.slug}/pause/", {"paused": "1"})
    assert response.status_code == 403
    assert not Campaign.objects.get(pk=campaign.pk).is_paused

"""The OpenAPI schema: valid, complete, and honoured by the app.

Schemathesis reads the app's own schema (from ``/api/schema/``, in process through the WSGI app)
and sends every operation generated requests, authenticated as a campaign manager with a token
and with seeded data; no request may get a 500, and every response must match the schema (status
code, content type, body). Bounded: a few examples per operation, no deadline.
"""

from __future__ import annotations

import random

import pytest
import schemathesis
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotators.models import ApiToken
from exports.models import Export
from exports.services import export_run
from imports.models import GenerationJob, ImportJob
from labeling.models import Membership
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_token,
    make_user,
)

schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
RNG = random.Random(0)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def test_the_schema_validates_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yml"))
    text = (tmp_path / "s.yml").read_text()
    for path in (
        "/api/campaigns/",
        "/api/campaigns/{slug}/imports/",
        "/api/campaigns/{slug}/generations/",
        "/api/campaigns/{slug}/generations/{id}/resume/",
        "/api/campaigns/{slug}/labels/",
        "/api/campaigns/{slug}/exports/{id}/files/{name}",
        "/api/campaigns/{slug}/next/",
        "/api/assignments/{id}/submit/",
        "/api/tokens/",
    ):
        assert f"  {path}:" in text, path
    assert "tokenAuth" in text and "cursor" in text


@pytest.fixture
def _keep_connection():
    """The WSGI app closes the database connection after each request, which would end the
    test's transaction; Django's test client turns that off the same way."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def seeded(db, settings, tmp_path, _keep_connection):
    """A campaign ``fuzz`` with solutions, labels, gold, an import, a generation job and a
    finished export."""
    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = make_campaign(slug="fuzz", overlap=2)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    solutions = [make_solution(campaign=campaign) for _ in range(3)]
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1])
    annotator = make_member(campaign=campaign).user
    work = make_labelled(solution=solutions[0], ratings=[1, 0, -1], annotator=annotator)
    export = Export.objects.create(campaign=campaign, format="trl")
    export_run(export=export)
    job = ImportJob.objects.create(campaign=campaign, file_name="x.jsonl", format="jsonl")
    generation = GenerationJob.objects.create(
        campaign=campaign, base_url="http://localhost:8000/v1", model="m", status="failed"
    )
    make_campaign(slug="elsewhere")
    key = make_token(user=manager, name="fuzz")
    decoy = ApiToken.objects.get(pk=ApiToken.objects.get(key_hash=ApiToken.hash_key(key)).pk)
    make_token(user=manager, name="decoy")
    ids = {
        "problems": [s.problem_id for s in solutions],
        "solutions": [s.pk for s in solutions],
        "exports": [export.pk],
        "imports": [job.pk],
        "generations": [generation.pk],
        "assignments": [work.pk],
        "tokens": [ApiToken.objects.get(name="decoy").pk],
    }
    assert decoy.name == "fuzz"
    make_user(username="outsider")
    return {"key": key, "ids": ids, "export": export}


def _point_at_seeded_data(case, seeded, rng: random.Random) -> None:
    """Aim most generated requests at the seeded campaign and its objects, so the fuzzing
    reaches the views' real work instead of 404s (the rest stay random)."""
    params = case.path_parameters or {}
    path = case.path
    if "slug" in params and rng.random() < 0.8:
        params["slug"] = "fuzz"
    if "id" in params:
        kind = path.strip("/").split("/")[-1] if path.endswith("{id}/") else None
        names = ("problems", "solutions", "exports", "imports", "generations", "assignments")
        for name in (*names, "tokens"):
            if f"/{name}/{{id}}" in path:
                kind = name
        if kind == "tokens":
            # Never the token the test authenticates with: revoking it ends the run.
            params["id"] = seeded["ids"]["tokens"][0]
        elif kind in seeded["ids"] and rng.random() < 0.7:
            params["id"] = rng.choice(seeded["ids"][kind])
    if "name" in params and rng.random() < 0.5:
        params["name"] = seeded["export"].files[0]["name"]


# slow: fuzzes every operation of the API (about 30 s of CPU in all); the schema's own check
# and the pages' lists stay in test-fast
@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)
@pytest.mark.django_db
def test_generated_requests_get_no_server_error_and_match_the_schema(case, seeded):
    _point_at_seeded_data(case, seeded, random.Random(hash(repr(case.path_parameters))))
    response = case.call(headers={"Authorization": f"Token {seeded['key']}"})
    case.validate_response(response, checks=CHECKS)


# --- The pages' lists and the submit endpoint's bounds ------------------------------------------
# The HTML lists are not in the API's schema; this one describes their query parameters so that
# the same fuzzing reaches them (signed in as the seeded campaign's manager, with a session).

_TEXT_OR_NUMBER = {"anyOf": [{"type": "integer"}, {"type": "string"}]}


def _query(name: str, example: str) -> dict:
    return {"name": name, "in": "query", "schema": _TEXT_OR_NUMBER, "example": example}


_SLUG = {
    "name": "slug",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "enum": ["fuzz", "elsewhere", "no-such"]},
}
_PAGE_LISTS = {
    "/campaigns/{slug}/reviews/": [
        _query("page", "9" * 30),
        _query("state", "all"),
        _query("annotator", "9" * 30),
        _query("kind", "qc"),
        _query("low_qc", "on"),
        _query("disagreement", "on"),
        _query("sort", "submitted"),
    ],
    "/campaigns/{slug}/gold/": [_query("page", "-" + "9" * 30), _query("solution", "9" * 30)],
    "/campaigns/{slug}/my-reviews/": [_query("page", "1e309")],
}
pages_schema = schemathesis.openapi.from_dict(
    {
        "openapi": "3.0.3",
        "info": {"title": "Stepwise pages (lists)", "version": "1"},
        "paths": {
            path: {
                "get": {
                    "parameters": [_SLUG, *params],
                    "responses": {"default": {"description": "an HTML page"}},
                }
            }
            for path, params in _PAGE_LISTS.items()
        },
    }
)
pages_schema.app = get_wsgi_application()


@pages_schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)
@pytest.mark.django_db
def test_the_page_lists_answer_every_query_without_a_server_error(case, seeded):
    from django.conf import settings as django_settings
    from django.test import Client

    browser = Client()
    browser.force_login(Membership.objects.get(campaign__slug="fuzz", role="manager").user)
    session = browser.cookies[django_settings.SESSION_COOKIE_NAME].value
    response = case.call(cookies={django_settings.SESSION_COOKIE_NAME: session})
    case.validate_response(response, checks=[not_a_server_error])
    assert response.status_code in (200, 302, 400, 403, 404, 405), response.status_code


@pytest.fixture
def leased(seeded):
    """An assignment the token's owner holds (leased by the queue), so submits reach the
    service's own checks."""
    from labeling import queue
    from labeling.models import Campaign

    campaign = Campaign.objects.get(slug="fuzz")
    manager = Membership.objects.get(campaign=campaign, role="manager").user
    assignment = queue.assignment_next(campaign=campaign, annotator=manager)
    assert assignment is not None
    return assignment


# slow: 60 generated submissions on top of the coverage cases (about 3 s)
@pytest.mark.slow
@schema.include(path_regex="/submit/$").parametrize()
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)
@pytest.mark.django_db
def test_the_submit_endpoint_holds_its_bounds_under_fuzzing(case, seeded, leased):
    case.path_parameters = {"id": leased.pk}
    response = case.call(headers={"Authorization": f"Token {seeded['key']}"})
    case.validate_response(response, checks=CHECKS)
    body = case.body if isinstance(case.body, dict) else {}
    for name in ("ratings", "flags", "step_times_ms"):
        if isinstance(body.get(name), list) and len(body[name]) > leased.solution.steps.count():
            # Refused, or a retry of a submission already made with this key (a replay).
            headers = {k.lower(): v for k, v in response.headers.items()}
            replayed = headers.get("idempotent-replayed") in ("true", ["true"])
            assert response.status_code in (400, 409) or replayed, (name, response.status_code)

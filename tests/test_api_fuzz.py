"""The API honours its own schema under fuzzing: every operation, and the submit endpoint's bounds.

Schemathesis reads the app's own schema (from ``/api/schema/``, in process through the WSGI
app) and sends every operation generated requests, authenticated as a campaign manager with a
token, aimed at seeded data (``api_seeded`` in tests/conftest.py); no request may get a 500, and
every response must match the schema (status code, content type, body). Bounded: a few examples
per operation, no deadline.

Every test here is slow, and so is collecting them: schemathesis builds each operation's
coverage cases when the tests are collected (about 3 s of CPU per process). ``make test-fast``
deselects slow tests, and tests/conftest.py does not even collect this module then
(``SLOW_MODULES``); ``make test`` runs it.
"""

from __future__ import annotations

import random

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from labeling.models import Membership

pytestmark = pytest.mark.slow

schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def _point_at_seeded_data(case, api_seeded, rng: random.Random) -> None:
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
            params["id"] = api_seeded["ids"]["tokens"][0]
        elif kind in api_seeded["ids"] and rng.random() < 0.7:
            params["id"] = rng.choice(api_seeded["ids"][kind])
    if "name" in params and rng.random() < 0.5:
        params["name"] = api_seeded["export"].files[0]["name"]


# slow: fuzzes every operation of the API (about 30 s of CPU in all); the schema's own check
# and the pages' lists stay in test-fast
@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)
@pytest.mark.django_db
def test_generated_requests_get_no_server_error_and_match_the_schema(case, api_seeded):
    _point_at_seeded_data(case, api_seeded, random.Random(hash(repr(case.path_parameters))))
    response = case.call(headers={"Authorization": f"Token {api_seeded['key']}"})
    case.validate_response(response, checks=CHECKS)


@pytest.fixture
def leased(api_seeded):
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
@schema.include(path_regex="/submit/$").parametrize()
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)
@pytest.mark.django_db
def test_the_submit_endpoint_holds_its_bounds_under_fuzzing(case, api_seeded, leased):
    case.path_parameters = {"id": leased.pk}
    response = case.call(headers={"Authorization": f"Token {api_seeded['key']}"})
    case.validate_response(response, checks=CHECKS)
    body = case.body if isinstance(case.body, dict) else {}
    for name in ("ratings", "flags", "step_times_ms"):
        if isinstance(body.get(name), list) and len(body[name]) > leased.solution.steps.count():
            # Refused, or a retry of a submission already made with this key (a replay).
            headers = {k.lower(): v for k, v in response.headers.items()}
            replayed = headers.get("idempotent-replayed") in ("true", ["true"])
            assert response.status_code in (400, 409) or replayed, (name, response.status_code)

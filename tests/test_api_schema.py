"""The OpenAPI schema: valid and complete; and the pages' lists, which it does not describe,
fuzzed the same way (every query answered without a server error).

The API's own operations are fuzzed against the schema in tests/test_api_fuzz.py (slow).
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error

from labeling.models import Membership


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
def test_the_page_lists_answer_every_query_without_a_server_error(case, api_seeded):
    from django.conf import settings as django_settings
    from django.test import Client

    browser = Client()
    browser.force_login(Membership.objects.get(campaign__slug="fuzz", role="manager").user)
    session = browser.cookies[django_settings.SESSION_COOKIE_NAME].value
    response = case.call(cookies={django_settings.SESSION_COOKIE_NAME: session})
    case.validate_response(response, checks=[not_a_server_error])
    assert response.status_code in (200, 302, 400, 403, 404, 405), response.status_code

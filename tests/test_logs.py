"""JSON logs (``LOG_FORMAT=json``, common/logs.py): a request's lines carry its id, user and
campaign, a job's lines its kind, id and campaign."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from common.logs import ContextFilter, JsonFormatter
from exports.models import Export
from exports.services import export_run
from labeling.models import Membership
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def json_lines():
    """The JSON lines written to the loggers named, as the settings' handler writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    attached = []

    def watch(name: str, level: int = logging.INFO):
        logger = logging.getLogger(name)
        attached.append((logger, logger.level))
        logger.addHandler(handler)
        logger.setLevel(level)
        return lambda: [json.loads(line) for line in stream.getvalue().splitlines()]

    yield watch
    for logger, level in attached:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_request_line_carries_its_id_user_and_campaign(client, json_lines):
    lines = json_lines("stepwise.requests")
    campaign = make_campaign(slug="logged")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)

    response = client.get(reverse("imports:list", kwargs={"slug": campaign.slug}))

    (line,) = lines()
    assert line["request_id"] == response["X-Request-ID"]
    assert (line["user_id"], line["campaign"], line["status"]) == (manager.pk, "logged", 200)
    assert line["path"] == f"/campaigns/{campaign.slug}/imports/"
    assert line["level"] == "INFO" and line["logger"] == "stepwise.requests"


def test_a_proxys_request_id_is_kept_and_a_malformed_one_replaced(client, json_lines):
    lines = json_lines("stepwise.requests")
    kept = client.get("/healthz", HTTP_X_REQUEST_ID="edge-42.a_b")
    replaced = client.get("/healthz", HTTP_X_REQUEST_ID="bad id\nforged: yes")
    assert kept["X-Request-ID"] == "edge-42.a_b"
    assert replaced["X-Request-ID"] != "bad id\nforged: yes"
    assert [line["request_id"] for line in lines()] == [
        "edge-42.a_b",
        replaced["X-Request-ID"],
    ]


def test_an_api_request_line_names_the_tokens_user(client, json_lines):
    lines = json_lines("stepwise.requests")
    campaign = make_campaign(slug="api-logged")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    token = make_token(user=manager)
    client.get(f"/api/campaigns/{campaign.slug}/exports/", HTTP_AUTHORIZATION=f"Token {token}")
    (line,) = lines()
    assert (line["user_id"], line["campaign"], line["status"]) == (manager.pk, "api-logged", 200)


def test_a_jobs_lines_carry_its_kind_id_and_campaign(settings, tmp_path, json_lines):
    lines = json_lines("common.jobs", logging.ERROR)
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    (settings.MEDIA_ROOT / "exports").write_text("not a folder: the export fails")
    campaign = make_campaign()
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1])
    export = Export.objects.create(campaign=campaign, format="trl")

    with pytest.raises(OSError):
        export_run(export=export)

    (line,) = lines()
    assert (line["job_kind"], line["job_id"], line["campaign"]) == (
        "exports",
        export.pk,
        campaign.pk,
    )
    assert line["message"] == f"exports job {export.pk} failed"
    assert "Traceback" in line["exc"]


def test_log_format_json_makes_every_line_json(settings):
    env = {**os.environ, "LOG_FORMAT": "json", "STEPWISE_VAR_DIR": str(settings.VAR_DIR)}
    env["DJANGO_SETTINGS_MODULE"] = "stepwise.settings"
    script = "import django, logging; django.setup(); logging.getLogger('x').warning('hello %s', 1)"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    line = json.loads(done.stderr.strip().splitlines()[-1])
    assert (line["level"], line["logger"], line["message"]) == ("WARNING", "x", "hello 1")

"""With ``STEPWISE_PRODUCTION=true`` the documented local scrape of ``/metrics`` works (issue 41:
it got an empty 301): plain HTTP is redirected to HTTPS as every page is (the token must not
travel in the clear through a network), and the documented command, which says the scheme the
way the proxy does (``X-Forwarded-Proto: https``), gets the figures."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT
from tests.test_security import production_env

PROBE = """
import django, json
django.setup()
from django.test import Client
client = Client()
bearer = {"HTTP_AUTHORIZATION": "Bearer prod-token"}
plain = client.get("/metrics", **bearer)
said = client.get("/metrics", HTTP_X_FORWARDED_PROTO="https", **bearer)
print(json.dumps({
    "plain": plain.status_code,
    "location": plain.get("Location", ""),
    "said": said.status_code,
    "body": said.content.decode()[:20000],
}))
"""


def test_the_documented_local_scrape_works_in_production(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=production_env(
            STEPWISE_METRICS_TOKEN="prod-token",
            STEPWISE_VAR_DIR=str(tmp_path),
            ALLOWED_HOSTS="testserver",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["plain"] == 301 and probe["location"].startswith("https://")
    assert probe["said"] == 200
    assert "stepwise_metrics_part_ok" in probe["body"]
    docs = (ROOT / "docs" / "operations.md").read_text()
    assert "-H 'X-Forwarded-Proto: https'" in docs

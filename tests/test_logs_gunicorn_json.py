"""Every line of the web process is JSON with ``LOG_FORMAT=json`` (issue 41: 16 of 22 lines were
plain text): the Procfile's own ``web`` line (gunicorn with ``stepwise/gunicorn_conf.py``, the
access log on) starts, serves a page, a 404 and a login, and stops on SIGTERM; every line it
wrote on stdout and stderr parses as one JSON object, gunicorn's own (starting, listening,
booting, stopping) and its access log (with method, path, status) among them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from common.units import absolute_binaries, procfile_processes
from tests.conftest import ROOT, database_url, free_port
from tests.waiting import answers, wait_until

pytestmark = [pytest.mark.slow]


def test_every_line_of_the_procfile_web_process_is_json(transactional_db, settings, tmp_path):
    import httpx

    port = free_port()
    bin_dir = Path(sys.executable).parent
    web = absolute_binaries(procfile_processes(ROOT / "Procfile")["web"], bin_dir)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "PORT": str(port),
        "DATABASE_URL": database_url(connection.settings_dict),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "STEPWISE_VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(tmp_path / "var" / "media"),
        "SECRET_KEY": "json-logs-test",
        "WEB_WORKERS": "1",
        "WEB_THREADS": "2",
        "LOG_FORMAT": "json",
        "LOG_LEVEL": "INFO",
    }
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", web],
            cwd=ROOT,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            answers(lambda: httpx.get(f"{url}/healthz").status_code == 200, httpx.TransportError),
            what="the web process to listen",
            seconds=90,
            every=0.3,
            processes=[proc],
            log=lambda: err.read_text(errors="replace")[-4000:],
        )
        assert httpx.get(f"{url}/login/").status_code == 200
        assert httpx.get(f"{url}/no-such-page/").status_code == 404
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)

    lines = [
        (name, line)
        for name, path in (("stdout", out), ("stderr", err))
        for line in path.read_text(errors="replace").splitlines()
        if line.strip()
    ]
    plain = []
    records = []
    for name, line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            plain.append(f"{name}: {line}")
    assert not plain, "\n".join(plain)
    messages = " | ".join(r["message"] for r in records)
    for said in ("Starting gunicorn", "Listening at", "Booting worker", "Shutting down"):
        assert said in messages, messages
    access = [r for r in records if r["logger"] == "gunicorn.access"]
    assert {(r["method"], r["path"], r["status"]) for r in access} >= {
        ("GET", "/healthz", 200),
        ("GET", "/login/", 200),
        ("GET", "/no-such-page/", 404),
    }
    assert all(isinstance(r["duration_ms"], float) for r in access)
    requests = [r for r in records if r["logger"] == "stepwise.requests"]
    assert any(r["path"] == "/login/" and r.get("request_id") for r in requests)


def test_a_web_process_that_cannot_start_says_why_in_json(tmp_path):
    """The database unreachable at start: the process exits 3, and its reason, like gunicorn's
    "Worker failed to boot", is a JSON line too."""
    bin_dir = Path(sys.executable).parent
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "DATABASE_URL": f"postgres://nobody@127.0.0.1:{free_port()}/stepwise",
        "STEPWISE_VAR_DIR": str(tmp_path / "var"),
        "SECRET_KEY": "json-logs-test",
        "LOG_FORMAT": "json",
    }
    done = subprocess.run(
        [
            str(bin_dir / "gunicorn"),
            "stepwise.wsgi:application",
            "--config",
            "python:stepwise.gunicorn_conf",
            "--bind",
            f"127.0.0.1:{free_port()}",
            "--workers",
            "1",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    records = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert any(
        r["logger"] == "stepwise.startup" and "the database (postgresql" in r["message"]
        for r in records
    )
    assert any("Worker failed to boot" in r["message"] for r in records)

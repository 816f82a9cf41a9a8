"""The smoke test of a deployment: the stack comes up from the Procfile (``honcho start``: web,
a default, a learning and a long worker, beat) on PostgreSQL and the broker, as
docs/operations.md says; an import, a labelling round over the API and an export go through it;
``/metrics`` counts them; and ``/readyz`` reports a worker that stops answering.

CI runs it on PostgreSQL + Redis (it is marked ``postgres``).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from labeling.models import Membership
from tests.conftest import database_url, free_port
from tests.factories import make_campaign, make_member, make_token
from tests.waiting import answers, wait_until

pytestmark = [pytest.mark.celery, pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
DEMO = django_settings.BASE_DIR / "demo"
DEADLINE_S = 240  # a failure bound, not a performance assertion
TOKEN = "smoke-metrics-token"


@pytest.fixture
def stack(transactional_db, settings, tmp_path):
    """``honcho start`` of the repository's Procfile, on the test database; its URL."""
    import httpx
    import psutil  # type: ignore[import-untyped]  # no stubs in the lock (types-psutil)

    port = free_port()
    var = tmp_path / "var"
    var.mkdir()
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "DATABASE_URL": database_url(connection.settings_dict),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "STEPWISE_VAR_DIR": str(var),
        "MEDIA_ROOT": str(var / "media"),
        "SECRET_KEY": "smoke-test-secret-key-shared-by-every-web-process",
        "ALLOWED_HOSTS": "127.0.0.1",
        "STEPWISE_METRICS_TOKEN": TOKEN,
        "STEPWISE_QUEUE_CONSUMERS_SECONDS": "1",
        "CELERY_TASK_ALWAYS_EAGER": "False",
        # Small, for a 2-core machine and PostgreSQL's shared connections.
        "WEB_WORKERS": "2",  # two, so that /metrics sums them (PROMETHEUS_MULTIPROC_DIR)
        "WEB_THREADS": "2",
        "WORKER_CONCURRENCY": "1",
        "LONG_CONCURRENCY": "1",
        "DB_CONN_MAX_AGE": "5",
        "STEPWISE_AL_SCORE_WORKERS": "1",
    }
    log_path = tmp_path / "honcho.log"
    with open(log_path, "wb") as log:
        honcho = subprocess.Popen(
            [str(Path(bin_dir) / "honcho"), "start", "-f", "Procfile", "-p", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, stopped whole at the end
        )

    class Stack:
        url = f"http://127.0.0.1:{port}"
        log = log_path

        @staticmethod
        def output() -> str:
            return log_path.read_text(errors="replace")

        @staticmethod
        def process(queue: str) -> psutil.Process:
            """The worker (Celery's main process) that consumes ``queue``."""
            for child in psutil.Process(honcho.pid).children(recursive=True):
                line = child.cmdline()
                queues = [line[i + 1] for i, arg in enumerate(line[:-1]) if arg == "-Q"]
                if line[:1] != ["/bin/sh"] and "celery" in " ".join(line) and queues == [queue]:
                    return child
            raise LookupError(queue)

    try:
        wait_until(
            answers(
                lambda: httpx.get(f"{Stack.url}/readyz", timeout=10).status_code == 200,
                httpx.TransportError,
            ),
            what="the stack to get ready",
            seconds=DEADLINE_S,
            every=0.5,
            processes=[honcho],
            log=lambda: Stack.output()[-6000:],
        )
        yield Stack
    finally:
        for child in psutil.Process(honcho.pid).children(recursive=True):
            if child.status() == psutil.STATUS_STOPPED:
                child.resume()
        honcho.send_signal(signal.SIGTERM)  # honcho stops every process it started
        try:
            honcho.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(honcho.pid, signal.SIGKILL)
            honcho.wait()


def _wait(client, url: str, *, until, what: str, stack) -> dict:
    last: list[dict] = []

    def answered() -> dict | None:
        last[:] = [client.get(url).json()]
        return last[0] if until(last[0]) else None

    return wait_until(
        answered,
        what=what,
        seconds=DEADLINE_S,
        every=0.3,
        log=lambda: f"last answer: {last}\n{stack.output()[-6000:]}",
    )


def test_the_procfile_stack_imports_labels_exports_and_reports_a_stopped_worker(stack):
    import httpx

    campaign = make_campaign(slug="smoke", overlap=1)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    annotator = make_member(campaign=campaign).user
    manage = httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Token {make_token(user=manager)}"}
    )
    label = httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Token {make_token(user=annotator)}"}
    )
    base = f"/api/campaigns/{campaign.slug}"

    # Import (the default worker).
    with open(DEMO / "gsm8k_model_solutions.jsonl", "rb") as fh:
        response = manage.post(
            f"{base}/imports/",
            data={"format": "jsonl", "grade": "false"},
            files={"file": ("gsm8k.jsonl", fh)},
        )
    assert response.status_code == 202, response.text
    job = _wait(
        manage,
        f"{base}/imports/{response.json()['id']}/",
        until=lambda b: b["status"] in ("done", "failed"),
        what="the import",
        stack=stack,
    )
    assert job["status"] == "done", job
    assert job["counts"]["solutions_created"] > 0

    # Labelling over the API (the web process).
    for k in range(3):
        body = label.post(f"{base}/next/").json()
        assignment = body["assignment"]
        assert assignment is not None, body
        ratings = [1] * len(assignment["steps"])
        submitted = label.post(
            assignment["submit_url"], json={"submission_key": f"smoke-{k}", "ratings": ratings}
        )
        assert submitted.status_code == 200, submitted.text

    # Export (the learning worker), downloaded.
    response = manage.post(f"{base}/exports/", json={"format": "trl"})
    assert response.status_code == 202, response.text
    export = _wait(
        manage,
        f"{base}/exports/{response.json()['id']}/",
        until=lambda b: b["status"] in ("done", "failed"),
        what="the export",
        stack=stack,
    )
    assert export["status"] == "done", export
    (entry,) = export["files"]
    content = manage.get(entry["url"]).content
    assert hashlib.sha256(content).hexdigest() == entry["sha256"]
    assert entry["records"] == 3

    # The metrics, with the token.
    assert httpx.get(f"{stack.url}/metrics").status_code == 404
    metrics = httpx.get(f"{stack.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    assert 'stepwise_jobs{kind="exports",state="done"} 1.0' in metrics
    assert 'stepwise_jobs{kind="imports",state="done"} 1.0' in metrics
    for queue in ("celery", "learning", "long"):
        assert f'stepwise_queue_consumers{{queue="{queue}"}} 1.0' in metrics
    assert (
        'stepwise_request_seconds_count{method="POST",status="2xx",view="api-campaign-next"}'
        in (metrics)
    )
    assert "stepwise_step_labels_last_minute" in metrics

    # The learning worker stops (SIGSTOP: alive, but answering nobody): readiness says so.
    stopped = stack.process("learning")
    stopped.suspend()
    readyz = _wait(
        httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {TOKEN}"}),
        "/readyz",
        until=lambda b: b["status"] == "not ready",
        what="readiness to see the stopped worker",
        stack=stack,
    )
    assert readyz["failed"] == ["workers"]
    assert readyz["errors"]["workers"] == "LookupError: no worker consumes learning"
    assert httpx.get(f"{stack.url}/readyz").status_code == 503
    stopped.resume()
    _wait(
        httpx.Client(base_url=stack.url),
        "/readyz",
        until=lambda b: b["status"] == "ready",
        what="readiness once the worker is back",
        stack=stack,
    )

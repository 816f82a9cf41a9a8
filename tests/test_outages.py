"""A running web process whose Redis or database goes away keeps answering (issue 41).

Redis (the cache, and the broker as the docs' ``.env`` has them on one server) is a private
``redis-server`` the test starts and kills under a real gunicorn: logging in (a wrong password
and a right one), the API and ``/metrics`` answer without a 500; the throttles fail open with a
logged warning (common/cache.py, common/throttle.py) and ``/metrics`` says
``stepwise_queue_depth -1`` and which part failed. Then the database becomes unreachable under a
running gunicorn (on SQLite its folder moves away; on PostgreSQL the test's own TCP relay to the
server closes): ``/healthz`` answers 200, with or without a session, ``/metrics`` answers 200 to
the token with what it could read and ``stepwise_metrics_part_ok{part="database"} 0``, and
``/readyz`` a 503 naming the database.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from django.db import connection

from labeling.models import Membership
from tests.conftest import database_url, free_port
from tests.factories import make_campaign, make_member, make_token, make_user
from tests.waiting import wait_until

pytestmark = [pytest.mark.celery, pytest.mark.slow]

TOKEN = "outage-metrics-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


@pytest.fixture
def private_redis(tmp_path):
    """A ``redis-server`` of the test's own on a free port; ``kill()`` ends it (SIGKILL)."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (apt-get install -y redis-server)")
    port = free_port()
    proc = subprocess.Popen(
        [
            *("redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""),
            *("--appendonly", "no", "--daemonize", "no", "--dir", str(tmp_path)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ping = ["redis-cli", "-p", str(port), "ping"]
    wait_until(
        lambda: subprocess.run(ping, capture_output=True, text=True).stdout.strip() == "PONG",
        what="redis-server to start",
        seconds=30,
        processes=[proc],
    )

    class Redis:
        url = f"redis://127.0.0.1:{port}"

        @staticmethod
        def kill() -> None:
            proc.kill()
            proc.wait(timeout=30)

    yield Redis
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)


def _login(client, username: str, password: str):
    client.get("/login/")
    return client.post(
        "/login/",
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
    )


def test_login_the_api_and_metrics_answer_with_redis_killed(
    media, settings, private_redis, web_processes, tmp_path
):
    import httpx

    campaign = make_campaign(slug="redis-down")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    make_user(username="alice", password="right-password")
    key = make_token(user=manager)
    url = web_processes(
        CACHE_URL=f"{private_redis.url}/1",
        CELERY_BROKER_URL=f"{private_redis.url}/0",
        STEPWISE_METRICS_TOKEN=TOKEN,
        STEPWISE_FAST_HASHER="true",
        STEPWISE_INSPECT_TIMEOUT="0.5",
    )
    browser = httpx.Client(base_url=url, timeout=30)
    assert _login(browser, "alice", "wrong").status_code == 200  # counted in Redis
    private_redis.kill()

    wrong = _login(httpx.Client(base_url=url, timeout=30), "alice", "wrong")
    assert wrong.status_code == 200 and "Please enter a correct username" in wrong.text
    right = _login(httpx.Client(base_url=url, timeout=30), "alice", "right-password")
    assert right.status_code == 302, right.text
    api = httpx.get(
        f"{url}/api/campaigns/{campaign.slug}/",
        headers={"Authorization": f"Token {key}"},
        timeout=30,
    )
    assert api.status_code == 200, api.text
    wrong_token = httpx.get(
        f"{url}/api/campaigns/", headers={"Authorization": "Token sw_wrong"}, timeout=30
    )
    assert wrong_token.status_code == 401
    metrics = httpx.get(f"{url}/metrics", headers=BEARER, timeout=30)
    assert metrics.status_code == 200, metrics.text
    for queue in settings.STEPWISE_QUEUES:
        assert f'stepwise_queue_depth{{queue="{queue}"}} -1.0' in metrics.text
    assert "stepwise_queue_consumers_known 0.0" in metrics.text
    assert 'stepwise_metrics_part_ok{part="database"} 1.0' in metrics.text
    ready = httpx.get(f"{url}/readyz", timeout=30)
    assert ready.status_code == 503 and "broker" in ready.json()["failed"]

    log = next(tmp_path.glob("gunicorn-*.log")).read_text(errors="replace")
    assert "the cache (Redis) cannot be reached" in log
    assert "Internal Server Error" not in log


class _Relay:
    """A TCP relay from a local port to the database server; ``close()`` makes the database
    unreachable (the port then refuses, as a server that went away)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def test_healthz_and_metrics_answer_with_the_database_unreachable(
    media, settings, web_processes, tmp_path
):
    import httpx

    make_user(username="staff", password="staff-password", is_staff=True)
    db = dict(connection.settings_dict)
    if db["ENGINE"].endswith("sqlite3"):
        folder = tmp_path / "db"
        folder.mkdir()
        copy = folder / "stepwise.sqlite3"
        with connection.cursor() as cursor:  # the test database, whole, users included
            cursor.execute("VACUUM INTO %s", [str(copy)])
        url_of_db = f"sqlite:///{copy}"

        def outage() -> None:
            folder.rename(tmp_path / "db-gone")

    else:
        relay = _Relay(db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432))
        url_of_db = database_url({**db, "HOST": "127.0.0.1", "PORT": relay.port})
        outage = relay.close
    url = web_processes(
        DATABASE_URL=url_of_db,
        DB_CONN_MAX_AGE="0",
        STEPWISE_METRICS_TOKEN=TOKEN,
        STEPWISE_FAST_HASHER="true",
        STEPWISE_INSPECT_TIMEOUT="0.5",
    )
    staff = httpx.Client(base_url=url, timeout=30)
    assert _login(staff, "staff", "staff-password").status_code == 302
    assert staff.get("/metrics").status_code == 200
    outage()

    for client in (httpx.Client(base_url=url, timeout=30), staff):  # a session cookie too
        health = client.get("/healthz")
        assert health.status_code == 200, health.text
        assert health.json() == {"status": "ok"}
    metrics = httpx.get(f"{url}/metrics", headers=BEARER, timeout=30)
    assert metrics.status_code == 200, metrics.text
    assert 'stepwise_metrics_part_ok{part="database"} 0.0' in metrics.text
    assert 'stepwise_metrics_part_ok{part="broker"} 1.0' in metrics.text
    assert "stepwise_queue_depth" in metrics.text and "stepwise_jobs{" not in metrics.text
    assert "stepwise_request_seconds" in metrics.text
    assert staff.get("/metrics").status_code == 404  # the session cannot be read: the token can
    ready = httpx.get(f"{url}/readyz", timeout=30)
    assert ready.status_code == 503 and "database" in ready.json()["failed"]

    log = Path(next(tmp_path.glob("gunicorn-*.log"))).read_text(errors="replace")
    assert "metrics: the database figures could not be read" in log
    assert "Internal Server Error" not in log

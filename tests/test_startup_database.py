"""A web process (gunicorn) and a worker refuse to start when their database is unreachable, and
say so (stepwise/startup.py), instead of serving ``/login/`` while the API answers 500, or saying
``ready`` and failing every job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port

pytestmark = [pytest.mark.celery, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def unreachable_env(settings):
    port = free_port()  # nothing listens there
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://stepwise@127.0.0.1:{port}/stepwise",
        "STEPWISE_VAR_DIR": str(settings.VAR_DIR),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    }, port


def _run(command: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_web_process_refuses_to_start_and_says_why(unreachable_env):
    env, port = unreachable_env
    web = free_port()
    done = _run(
        [sys.executable, "-m", "gunicorn", "stepwise.wsgi:application", f"--bind=127.0.0.1:{web}"],
        env,
    )
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Stepwise web process cannot start: the database" in out
    assert f"127.0.0.1:{port}" in out and "Check DATABASE_URL" in out
    assert "Worker failed to boot" in out  # gunicorn stopped, serving nothing


def test_the_worker_refuses_to_start_and_says_why(unreachable_env):
    env, port = unreachable_env
    done = _run(
        [sys.executable, "-m", "celery", "-A", "stepwise", "worker", "--pool=solo", "-Q", "celery"],
        env,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 3
    assert "Stepwise worker cannot start: the database" in out
    assert f"127.0.0.1:{port}" in out
    assert "ready." not in out

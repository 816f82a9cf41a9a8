"""The wheel: ``pip wheel`` of this repository installs, into a fresh virtual environment outside
the checkout, a ``stepwise`` command that migrates, creates a user, imports the packaged demo
data, exports it, and runs the web server with a worker on the embedded defaults, its data in
``$STEPWISE_HOME/var`` (README, "The two commands").

The fresh environment has no pip and nothing installed but the wheel (``--no-deps --no-index``:
no network); its dependencies come from this environment's site-packages through a ``.pth``
file, so the test needs nothing a CI clone lacks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import httpx
import pytest

from tests.generation_servers import free_port
from tests.waiting import answers, wait_until

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _sh(*command: str | Path, **options) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=600, **options
    )
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The fresh environment's ``bin`` folder, with the wheel installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    _sh(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        ROOT,
        "--no-deps",
        "--no-build-isolation",
        "-w",
        tmp / "dist",
        "-q",
    )
    (wheel,) = (tmp / "dist").glob("stepwise-*.whl")
    venv = tmp / "venv"
    _sh(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(
        _sh(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        ).stdout.strip()
    )
    (site / "stepwise-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _sh(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "-q",
        wheel,
    )
    return venv / "bin"


def test_the_installed_command_runs_the_app_outside_the_checkout(installed, tmp_path):
    home = tmp_path / "home"
    env = {
        "PATH": f"{installed}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "STEPWISE_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "DJANGO_SUPERUSER_PASSWORD": "pw-for-the-wheel-test",
    }
    stepwise = installed / "stepwise"
    where = _sh(
        installed / "python",
        "-c",
        "import stepwise; print(stepwise.__file__)",
        env=env,
        cwd=tmp_path,
    )
    assert not where.stdout.startswith(str(ROOT))  # the wheel's copy, not the checkout's
    _sh(stepwise, "migrate", "-v", "0", env=env, cwd=tmp_path)
    assert (home / "var" / "stepwise.sqlite3").is_file()
    _sh(
        stepwise,
        "createuser",
        "--noinput",
        "--username",
        "admin",
        "--email",
        "a@example.org",
        env=env,
        cwd=tmp_path,
    )
    demo = Path(
        _sh(
            installed / "python",
            "-c",
            "from django.conf import settings; import django, os;"
            "os.environ['DJANGO_SETTINGS_MODULE'] = 'stepwise.settings'; django.setup();"
            "print(settings.ASSETS_DIR / 'demo' / 'gsm8k_model_solutions.jsonl')",
            env=env,
            cwd=tmp_path,
        ).stdout.strip()
    )
    assert demo.is_file() and not str(demo).startswith(str(ROOT))
    imported = _sh(
        stepwise,
        "import",
        demo,
        "--campaign",
        "w",
        "--format",
        "jsonl",
        "--no-grade",
        env=env,
        cwd=tmp_path,
    )
    assert "solutions" in imported.stdout
    _sh(
        stepwise,
        "export",
        "--campaign",
        "w",
        "--format",
        "csv",
        "--out",
        tmp_path / "w.csv",
        env=env,
        cwd=tmp_path,
    )
    assert (tmp_path / "w.csv").is_file()

    port = free_port()
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        run = subprocess.Popen(
            [stepwise, "run", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            answers(
                lambda: httpx.get(f"{base}/healthz", timeout=2).status_code == 200, httpx.HTTPError
            ),
            what="the installed app's web process",
            seconds=120,
            every=0.5,
            processes=[run],
            log=log.read_text,
        )
        login = httpx.get(f"{base}/login/", timeout=10)
        assert login.status_code == 200 and "/static/" in login.text  # templates found
        assert httpx.get(f"{base}/static/css/stepwise.css", timeout=10).status_code == 200
        # Ready: the database, the storage and a worker on every queue (the one it started).
        wait_until(
            answers(
                lambda: httpx.get(f"{base}/readyz", timeout=10).status_code == 200, httpx.HTTPError
            ),
            what="a worker on every queue",
            seconds=120,
            every=1,
            processes=[run],
            log=log.read_text,
        )
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
    assert run.returncode == 0, log.read_text()[-3000:]

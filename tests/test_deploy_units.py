"""The production process definition: ``manage.py deploy_units`` writes one systemd service per
Procfile process, and each unit's command, started the way systemd starts it (``env -i`` with the
unit's ``Environment=`` lines and its ``EnvironmentFile=``, in its ``WorkingDirectory=``, no login
shell), gives a listening web process and workers that consume their queues. A worker killed
alone leaves the others serving (each unit restarts on its own: ``Restart=always``).

Runs on SQLite with the filesystem broker and on PostgreSQL with Redis (whatever the test
database and ``CELERY_BROKER_URL`` are).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from common.units import read_environment_file, unit_command
from labeling.models import Membership
from tests.conftest import ROOT, database_url, free_port
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_token
from tests.waiting import answers, wait_until

DEADLINE_S = 180  # a failure bound, not a performance assertion
TOKEN = "units-metrics-token"


def _write_units(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "units"
    env_file = tmp_path / "stepwise.env"
    env_file.write_text("# the site's settings\nDEBUG=false\n")
    call_command(
        "deploy_units",
        str(out),
        "--env-file",
        str(env_file),
        "--root",
        str(ROOT),
        *extra,
        stdout=open(os.devnull, "w"),  # noqa: SIM115
    )
    return out


def test_every_procfile_process_has_a_unit_with_absolute_binaries_and_no_login_shell(tmp_path):
    out = _write_units(tmp_path, "-c", "long=2")
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "stepwise-beat-1.service",
        "stepwise-learning-1.service",
        "stepwise-long-1.service",
        "stepwise-long-2.service",
        "stepwise-web-1.service",
        "stepwise-worker-1.service",
        "stepwise.target",
    ]
    for path in out.glob("*.service"):
        text = path.read_text()
        env, argv, workdir, files = unit_command(text)
        assert "Restart=always" in text
        assert argv[:2] == ["/bin/sh", "-c"]  # not -lc: no /etc/profile resetting PATH
        assert workdir == ROOT and files == [tmp_path / "stepwise.env"]
        assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
        binary = argv[2].split("exec ", 1)[1].split()[0]
        assert Path(binary).is_absolute() and os.access(binary, os.X_OK), binary
        assert "%h" in argv[2] or "beat" in path.name or "web" in path.name
    target = (out / "stepwise.target").read_text()
    assert "stepwise-long-2.service" in target and "WantedBy=multi-user.target" in target
    if shutil.which("systemd-analyze"):
        verify = subprocess.run(
            ["systemd-analyze", "verify", *map(str, out.glob("*.service"))],
            capture_output=True,
            text=True,
        )
        assert "Unknown key" not in verify.stderr and "Invalid" not in verify.stderr, verify.stderr


@pytest.mark.celery
@pytest.mark.slow
def test_each_unit_started_as_systemd_would_serves_and_consumes_its_queue(
    transactional_db, settings, tmp_path
):
    import httpx

    var = tmp_path / "var"
    port = free_port()
    out = _write_units(tmp_path, "--port", str(port))
    (tmp_path / "stepwise.env").write_text(
        "\n".join(
            [
                "# as an operator writes it: one KEY=VALUE a line, comments on lines of their own",
                f"DATABASE_URL={database_url(connection.settings_dict)}",
                f"CELERY_BROKER_URL={settings.CELERY_BROKER_URL}",
                f"STEPWISE_VAR_DIR={var}",
                f"MEDIA_ROOT={var / 'media'}",
                "SECRET_KEY=units-test-secret-key-shared-by-every-process",
                "ALLOWED_HOSTS=127.0.0.1",
                f"STEPWISE_METRICS_TOKEN={TOKEN}",
                "STEPWISE_QUEUE_CONSUMERS_SECONDS=1",
                "WEB_WORKERS=1",
                "WEB_THREADS=2",
                "WORKER_CONCURRENCY=1",
                "LONG_CONCURRENCY=1",
                "STEPWISE_AL_SCORE_WORKERS=1",
                'LOG_FORMAT="text"',
                "",
            ]
        )
    )
    started: dict[str, subprocess.Popen] = {}
    logs: dict[str, Path] = {}

    def output() -> str:
        return "\n".join(
            f"== {n}\n{p.read_text(errors='replace')[-3000:]}" for n, p in logs.items()
        )

    try:
        for unit in sorted(out.glob("*.service")):
            env, argv, workdir, files = unit_command(unit.read_text())
            for path in files:
                env |= read_environment_file(path)  # systemd: the files override Environment=
            name = unit.name.split("-")[1]
            logs[name] = tmp_path / f"{name}.log"
            with open(logs[name], "wb") as log:
                started[name] = subprocess.Popen(
                    ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv],
                    cwd=workdir,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a process group, as systemd's cgroup
                )
        url = f"http://127.0.0.1:{port}"
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        last: list[object] = []

        def ready() -> bool:
            answer = httpx.get(f"{url}/readyz", headers=bearer, timeout=10)
            last[:] = [answer.text]
            return answer.status_code == 200

        wait_until(
            answers(ready, httpx.TransportError),
            what="every unit up: the web process listening, a worker on every queue",
            seconds=DEADLINE_S,
            every=0.5,
            processes=list(started.values()),
            log=lambda: f"{last}\n{output()}",
        )

        # A job through the web process and the learning worker.
        campaign = make_campaign(slug="units")
        make_labelled(solution=make_solution(campaign=campaign), ratings=[1, -1])
        manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
        api = httpx.Client(
            base_url=url, headers={"Authorization": f"Token {make_token(user=manager)}"}
        )
        posted = api.post(f"/api/campaigns/{campaign.slug}/exports/", json={"format": "trl"})
        assert posted.status_code == 202, posted.text
        detail = f"/api/campaigns/{campaign.slug}/exports/{posted.json()['id']}/"
        export = wait_until(
            lambda: (b := api.get(detail).json())["status"] in ("done", "failed") and b,
            what="the export to run on the learning unit",
            seconds=DEADLINE_S,
            every=0.3,
            processes=list(started.values()),
            log=output,
        )
        assert export["status"] == "done", export

        # One unit's process killed: the others go on (systemd restarts that one alone).
        os.killpg(started["long"].pid, signal.SIGKILL)
        started["long"].wait(timeout=30)
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        assert all(p.poll() is None for n, p in started.items() if n != "long"), output()
    finally:
        for proc in started.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in started.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

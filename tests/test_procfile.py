"""The Procfile is the one process definition: every queue has a worker, one beat runs, each
gunicorn has its own control socket, and the systemd units are written from the same lines
(``honcho export systemd``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]


def _processes() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


def test_every_queue_has_a_worker_and_one_beat_runs():
    processes = _processes()
    consumed = []
    for command in processes.values():
        words = command.split()
        if "worker" in words:
            consumed += words[words.index("-Q") + 1].split(",")
    assert sorted(consumed) == sorted(settings.STEPWISE_QUEUES)
    assert [name for name, c in processes.items() if " beat" in c] == ["beat"]
    assert "--control-socket" in processes["web"] and "$PORT" in processes["web"]


def test_the_systemd_units_are_written_from_the_procfile(tmp_path):
    honcho = Path(sys.executable).parent / "honcho"
    subprocess.run(
        [str(honcho), "export", "systemd", str(tmp_path), "-a", "stepwise", "-u", "stepwise"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    for name, command in _processes().items():
        unit = (tmp_path / f"stepwise-{name}-1.service").read_text()
        assert command in unit
        assert "Restart=always" in unit
    assert "stepwise-learning.target" in (tmp_path / "stepwise.target").read_text()

"""A worker (and beat) given a malformed ``STEPWISE_ENDPOINTS`` says so in one line and exits 3,
as the web process does, instead of a long traceback (issue 41)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        ("[{", "STEPWISE_ENDPOINTS is not valid JSON"),
        ('[{"name": "x"}]', "STEPWISE_ENDPOINTS[0] ('x'), field 'kind'"),
    ],
)
@pytest.mark.parametrize("command", ["worker", "beat"])
def test_a_malformed_endpoint_declaration_is_one_line_and_exit_3(tmp_path, declared, said, command):
    env = {
        **os.environ,
        "STEPWISE_ENDPOINTS": declared,
        "STEPWISE_VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": "filesystem://",
    }
    done = subprocess.run(
        [
            *(sys.executable, "-m", "celery", "-A", "stepwise", command),
            *(["--pool=solo"] if command == "worker" else []),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("Stepwise cannot start: ") and said in lines[0]

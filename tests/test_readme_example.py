"""The README's REST API example runs as written: against a live server and a real Celery
worker, in its own Python process, with a token created the way the README says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from exports.models import Export
from labeling.models import Assignment, Campaign, Membership
from tests.factories import make_token, make_user

pytestmark = [pytest.mark.celery, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example() -> str:
    section = README.read_text().split("## The REST API", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


PROBLEMS = [
    {
        "problem": "What is $2 + 3$?",
        "ground_truth_answer": "5",
        "solutions": [{"steps": ["2 + 3 = 6.", "# Answer\n\n6"], "generator": "m1"}],
    },
    {
        "problem": "What is $4 \\cdot 2$?",
        "ground_truth_answer": "8",
        "solutions": [{"text": "Four twos.\n\nSo $\\boxed{8}$.", "generator": "m1"}],
    },
]


@pytest.fixture
def media(settings, tmp_path):
    """Set before the worker starts: it gets the media root from this process's settings."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


def test_the_readme_example_runs_as_written(media, tmp_path, live_server, celery_worker_process):
    user = make_user(username="scripter")
    key = make_token(user=user, name="readme")
    work = tmp_path / "work"
    work.mkdir()
    (work / "problems.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    (work / "example.py").write_text(readme_example())

    env = {**os.environ, "STEPWISE_URL": live_server.url, "STEPWISE_TOKEN": key}
    result = subprocess.run(
        [sys.executable, "example.py"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a failure bound for the worker, not a performance assertion
    )
    assert result.returncode == 0, result.stdout + result.stderr + worker_log(celery_worker_process)
    out = result.stdout
    assert "imported: done 2 solutions" in out
    assert "submitted: found_error" in out
    exported = re.search(r"exported: (\S+) (\[.*\])", out)
    assert exported and exported.group(1).endswith(".jsonl")
    labels = json.loads(exported.group(2).replace("True", "true").replace("False", "false"))
    assert labels[-1] is False and all(labels[:-1])

    campaign = Campaign.objects.get(slug="api-demo")
    assert Membership.objects.get(campaign=campaign, user=user).role == "manager"
    assert Assignment.objects.get(campaign=campaign).status == "submitted"
    assert Export.objects.get(campaign=campaign).status == "done"


def worker_log(proc) -> str:
    return "\n--- worker ---\n" + Path(proc.log_path).read_text()[-3000:]

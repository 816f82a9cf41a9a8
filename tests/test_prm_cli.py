"""`python -m prm train|eval|score` end to end on the tiny fixture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"
ROOT = Path(__file__).resolve().parents[1]


def _prm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "prm", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_the_cli_trains_evaluates_and_scores(tmp_path):
    model = tmp_path / "model"
    done = _prm("train", "--data", str(SMALL), "--out", str(model), "--epochs", "2", "--seed", "3")
    assert done.returncode == 0, done.stderr
    assert "saved" in done.stdout and "validation AUROC" in done.stdout
    assert (model / "config.json").is_file()

    done = _prm("eval", "--model", str(model), "--data", str(SMALL), "--bootstrap", "50")
    assert done.returncode == 0, done.stderr
    for words in ("step AUROC", "95% CI", "step accuracy", "first-error F1", "best-of-N"):
        assert words in done.stdout

    scores = tmp_path / "scores.jsonl"
    done = _prm("score", "--model", str(model), "--data", str(SMALL), "--out", str(scores))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in scores.read_text().splitlines()]
    assert len(rows) == len(SMALL.read_text().splitlines())
    assert all(0.0 <= row["score"] <= 1.0 for row in rows)


def test_the_cli_says_what_is_wrong_with_a_missing_file(tmp_path):
    done = _prm("train", "--data", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "m"))
    assert done.returncode != 0
    assert "no such data file" in done.stderr

"""bench/prm_eval.py's own logic: model specs, the training command, when a checkpoint is reused."""

from __future__ import annotations

from pathlib import Path

import pytest

import prm
from bench.prm_eval import parse_model, train_command, up_to_date
from prm.data import sha256_file

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


def test_a_model_spec_names_backbone_options_and_training_settings():
    assert parse_model("ft=minilm,finetune_layers=1,epochs=2") == (
        "ft",
        "minilm",
        ["finetune_layers=1", "epochs=2"],
    )
    with pytest.raises(SystemExit, match="NAME=BACKBONE"):
        parse_model("minilm")
    with pytest.raises(SystemExit, match="not key=value"):
        parse_model("m=minilm,finetune_layers")
    cmd = train_command(
        Path("e.jsonl"), Path("out"), "minilm", ["finetune_layers=1", "epochs=2"], 3
    )
    assert cmd[1:4] == ["-m", "prm", "train"]
    assert cmd[cmd.index("--set") + 1] == "finetune_layers=1"
    assert cmd[cmd.index("--epochs") + 1] == "2" and cmd[cmd.index("--seed") + 1] == "3"


def test_a_checkpoint_is_reused_only_for_the_same_export_backbone_options_and_seed(tmp_path):
    prm.train(SMALL, tmp_path, backbone="bow", epochs=1, seed=0, progress=False)
    sha = sha256_file(SMALL)
    assert up_to_date(tmp_path, sha, "bow", [], 0)
    assert up_to_date(tmp_path, sha, "bow", ["dim=32", "epochs=1"], 0)
    assert not up_to_date(tmp_path, "0" * 64, "bow", [], 0)
    assert not up_to_date(tmp_path, sha, "bow", ["dim=64"], 0)
    assert not up_to_date(tmp_path, sha, "bow", ["epochs=2"], 0)
    assert not up_to_date(tmp_path, sha, "bow", [], 1)
    assert not up_to_date(tmp_path, sha, "minilm", [], 0)
    assert not up_to_date(tmp_path / "missing", sha, "bow", [], 0)

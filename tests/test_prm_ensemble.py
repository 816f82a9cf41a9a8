"""Ensembles of checkpoints, and refusing a checkpoint made with other features."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import prm
from prm.data import read_dataset
from prm.ensemble import build_ensemble

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    dataset = read_dataset(SMALL)
    root = tmp_path_factory.mktemp("members")
    for seed, options in ((1, {}), (2, {"ngrams": 1, "dim": 16})):
        prm.train(dataset, root / str(seed), epochs=2, seed=seed, options=options, progress=False)
    return dataset, [root / "1", root / "2"]


def test_an_ensemble_combines_member_logits_with_weights_fitted_on_validation(members, tmp_path):
    dataset, dirs = members
    result = build_ensemble(dirs, dataset, tmp_path / "ens")
    assert len(result["weights"]) == 2
    scorer = prm.load(tmp_path / "ens")
    rows = dataset.solutions[:30]
    parts = [prm.load(d).logits(rows) for d in dirs]
    expected = [
        result["bias"] + result["weights"][0] * a + result["weights"][1] * b
        for a, b in zip(*parts, strict=True)
    ]
    for got, want in zip(scorer.logits(rows), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # the directory stands alone: its members were copied in
    assert (tmp_path / "ens" / "members" / "0" / "model.safetensors").is_file()
    assert prm.evaluate(scorer, dataset, split="test", bootstrap=20)["steps"] > 0


def test_a_checkpoint_made_with_other_features_is_refused(members, tmp_path):
    _, dirs = members
    import shutil

    shutil.copytree(dirs[0], tmp_path / "old")
    config = json.loads((tmp_path / "old" / "config.json").read_text())
    config["backbone"]["features"] = 1
    (tmp_path / "old" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="retrain"):
        prm.load(tmp_path / "old")

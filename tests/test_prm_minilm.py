"""The `minilm` backbone: the packaged all-MiniLM-L6-v2, top layer fine-tuned, saved compactly."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors import safe_open

import prm
from prm.data import read_dataset

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


@pytest.mark.slow
def test_it_fine_tunes_the_top_layer_and_saves_only_what_changed(tmp_path):
    dataset = read_dataset(SMALL)
    rows = dataset.split("train")[:30] + dataset.split("validation")[:15]
    metrics = prm.train(
        rows,
        tmp_path,
        backbone="minilm",
        epochs=1,
        options={"finetune_layers": 1, "max_length": 64},
        progress=False,
    )
    assert metrics["validation_auroc"] is not None
    with safe_open(tmp_path / "model.safetensors", "pt") as weights:
        names = list(weights.keys())
    assert any(n.startswith("encoder.encoder.layer.5.") for n in names)
    assert not any(n.startswith("encoder.encoder.layer.4.") for n in names)
    assert not any(n.startswith("encoder.embeddings.") for n in names)
    scorer = prm.load(tmp_path)
    probs = scorer.score(rows)
    assert all(0.0 < p < 1.0 for ps in probs for p in ps)
    assert prm.load(tmp_path).score(rows) == probs


@pytest.mark.slow
def test_retraining_reuses_the_frozen_layers_outputs(tmp_path):
    dataset = read_dataset(SMALL)
    rows = dataset.split("train")[:12] + dataset.split("validation")[:6]
    cache = tmp_path / "cache"
    options = {"finetune_layers": 0, "max_length": 48}
    first = prm.train(
        rows,
        tmp_path / "a",
        backbone="minilm",
        epochs=2,
        options=options,
        cache_dir=str(cache),
        progress=False,
    )
    assert len(list(cache.glob("*.pt"))) == 1
    second = prm.train(
        rows,
        tmp_path / "b",
        backbone="minilm",
        epochs=2,
        options=options,
        cache_dir=str(cache),
        progress=False,
    )
    assert len(list(cache.glob("*.pt"))) == 1  # nothing new to run the encoder on
    assert second["validation_auroc"] == first["validation_auroc"]

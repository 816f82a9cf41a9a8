"""How long ``bow`` trains: batch size and epochs by the size of the training set, validation
within an epoch on large sets, early stopping, and the weights of the best point kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import prm
from prm.data import read_dataset, unique_steps
from prm.metrics import auroc
from prm.training import EVAL_ITEMS, TrainConfig, bow_batch_size, bow_epochs

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


@pytest.fixture(scope="module")
def dataset():
    return read_dataset(SMALL)


def test_the_batch_grows_with_the_training_set_from_phase_1s_size():
    assert bow_batch_size(386) == bow_batch_size(33_000) == bow_batch_size(99_999) == 128
    assert bow_batch_size(100_000) == 256 and bow_batch_size(200_000) == 512
    assert bow_batch_size(400_000) == bow_batch_size(732_148) == bow_batch_size(10**8) == 1024


def test_epochs_are_capped_by_item_visits_but_never_below_two():
    assert bow_epochs(386) == bow_epochs(250_000) == 8
    assert bow_epochs(400_000) == 5 and bow_epochs(732_148) == 3
    assert bow_epochs(1_000_000) == bow_epochs(10**8) == 2
    for n in range(50_000, 3_000_000, 50_000):
        epochs = bow_epochs(n)
        assert 2 <= epochs <= 8
        if 2 < epochs < 8:  # the fewest epochs that make 2M item visits
            assert (epochs - 1) * n < 2_000_000 <= epochs * n


def test_given_values_win_over_the_sized_defaults():
    cfg = TrainConfig(epochs=5, batch_size=64).resolved().sized(10**6)
    assert (cfg.epochs, cfg.batch_size) == (5, 64)
    cfg = TrainConfig().resolved().sized(10**6)
    assert (cfg.epochs, cfg.batch_size) == (2, 1024)
    minilm = TrainConfig(backbone="minilm").resolved().sized(10**6)
    assert (minilm.epochs, minilm.batch_size) == (3, 32)  # fixed for the transformers


def test_a_small_set_is_validated_once_an_epoch(dataset, tmp_path):
    metrics = prm.train(dataset, tmp_path, epochs=3, patience=5, progress=False)
    assert len(metrics["history"]) == 3
    assert [h["epoch"] for h in metrics["history"]] == [1, 2, 3]
    assert not any("passes" in h for h in metrics["history"])
    assert metrics["train_items"] < EVAL_ITEMS


def test_a_large_set_is_validated_within_epochs_and_stops_after_its_patience(dataset, tmp_path):
    # 386 training items and an evaluation every 100: four points an epoch (the last at its end)
    metrics = prm.train(
        dataset, tmp_path, epochs=6, eval_every=100, batch_size=32, patience=2, progress=False
    )
    history = metrics["history"]
    passes = [h.get("passes", h["epoch"]) for h in history]
    assert passes == sorted(passes) and len(set(passes)) == len(passes)
    assert any(isinstance(p, float) and p < 1 for p in passes)
    aurocs = [h["validation_auroc"] for h in history]
    best = aurocs.index(max(aurocs))
    assert metrics["validation_auroc"] == max(aurocs)
    assert metrics["best_epoch"] == passes[best]
    if len(history) < 6 * 4:  # stopped early: exactly ``patience`` evaluations after the best
        assert len(history) == best + 1 + 2

    # The checkpoint holds the weights of the best point, not of the last.
    scorer = prm.load(tmp_path)
    val = dataset.split("validation")
    z, y, _ = unique_steps(val, scorer.logits(val))
    assert auroc(y, z) == pytest.approx(metrics["validation_auroc"], abs=1e-12)

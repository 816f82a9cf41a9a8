"""Reading PRM training data: `trl` rows, PRM800K lines under the default policy, splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prm.data import (
    Solution,
    prm800k_solutions,
    read_dataset,
    split_of,
    step_examples,
    unique_steps,
)

FIXTURES = Path(__file__).parent / "fixtures"
SMALL = FIXTURES / "prm" / "phase1_trl_small.jsonl"
RAW = FIXTURES / "prm800k_raw_samples"


def _line(steps: list[dict]) -> dict:
    return {"question": {"problem": "P", "ground_truth_answer": "4"}, "label": {"steps": steps}}


def test_it_reads_trl_rows_with_their_labels():
    dataset = read_dataset(SMALL)
    first = dataset.solutions[0]
    assert first.problem.startswith("How many positive two-digit integers")
    assert len(first.steps) == len(first.labels)
    assert dataset.source["sha256"] and dataset.source["label_policy"]["neutral"] == "positive"


def test_it_reads_parquet_exports_the_same_as_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in SMALL.read_text().splitlines()]
    table = pa.Table.from_pylist(
        [{k: r[k] for k in ("prompt", "completions", "labels")} for r in rows]
    )
    pq.write_table(table, tmp_path / "export.parquet")
    parquet = read_dataset(tmp_path / "export.parquet").solutions
    jsonl = read_dataset(SMALL).solutions
    assert [(s.problem, s.steps, s.labels) for s in parquet] == [
        (s.problem, s.steps, s.labels) for s in jsonl
    ]


def test_it_counts_neutral_as_positive_and_cuts_after_the_first_negative():
    line = _line(
        [
            {"completions": [{"text": "a", "rating": 1}], "chosen_completion": 0},
            {"completions": [{"text": "b", "rating": 0}], "chosen_completion": 0},
            {"completions": [{"text": "c", "rating": -1}], "chosen_completion": None},
            {"completions": [{"text": "d", "rating": 1}], "chosen_completion": 0},
        ]
    )
    [path] = prm800k_solutions(line)
    assert path.steps == ("a", "b", "c")
    assert path.labels == (True, True, False)
    assert path.first_error == 2


def test_each_rated_alternative_becomes_its_own_row_behind_the_chosen_prefix():
    line = _line(
        [
            {"completions": [{"text": "a", "rating": 1}], "chosen_completion": 0},
            {
                "completions": [
                    {"text": "wrong", "rating": -1},
                    {"text": "good", "rating": 1, "answer": "4"},
                    {"text": "unrated", "rating": None},
                    {"text": "meh", "rating": 0, "answer": "5"},
                ],
                "chosen_completion": 1,
            },
        ]
    )
    rows = prm800k_solutions(line)
    assert [(r.steps, r.labels) for r in rows] == [
        (("a", "good"), (True, True)),
        (("a", "wrong"), (True, False)),
        (("a", "meh"), (True, True)),
    ]
    assert rows[0].answer_correct is True and rows[2].answer_correct is False


def test_a_human_completion_is_a_positive_step_of_the_path():
    line = _line(
        [
            {
                "completions": [{"text": "bad", "rating": -1}],
                "chosen_completion": None,
                "human_completion": {"text": "fixed", "rating": None},
            },
            {"completions": [{"text": "next", "rating": 1}], "chosen_completion": 0},
        ]
    )
    rows = prm800k_solutions(line)
    assert (rows[0].steps, rows[0].labels) == (("fixed", "next"), (True, True))
    assert (rows[1].steps, rows[1].labels) == (("bad",), (False,))


def test_it_reads_raw_prm800k_phase1_and_phase2_lines():
    for name in ("phase1_train_examples.jsonl", "phase2_train_examples.jsonl"):
        dataset = read_dataset(RAW / name)
        assert dataset.solutions
        for s in dataset.solutions:
            # cut at the first negative: a negative step can only be the last one
            assert all(s.labels[:-1])


def test_the_split_keeps_every_row_of_a_problem_together_and_is_stable():
    dataset = read_dataset(SMALL)
    splits = {}
    for s in dataset.solutions:
        splits.setdefault(s.problem, set()).add(split_of(s.problem))
    assert all(len(v) == 1 for v in splits.values())
    assert {next(iter(v)) for v in splits.values()} == {"train", "validation", "test"}
    assert split_of("How many seconds are in 7.8 minutes?") == split_of(
        "How many seconds are in 7.8 minutes?"
    )


def test_shared_prefixes_count_once():
    rows = [
        Solution("P", ("a", "b"), (True, True)),
        Solution("P", ("a", "c"), (True, False)),
    ]
    assert [(e.previous, e.step, e.label) for e in step_examples(rows)] == [
        ((), "a", True),
        (("a",), "b", True),
        (("a",), "c", False),
    ]
    values, labels, _ = unique_steps(rows, [[0.1, 0.2], [0.1, 0.3]])
    assert values.tolist() == [0.1, 0.2, 0.3] and labels.tolist() == [True, True, False]


def test_a_manifest_beside_the_export_is_recorded(tmp_path):
    data = tmp_path / "export.jsonl"
    data.write_text(SMALL.read_text())
    (tmp_path / "export.manifest.json").write_text(json.dumps({"label_policy": {"x": 1}}))
    source = read_dataset(data).source
    assert len(source["manifest_sha256"]) == 64
    assert source["label_policy"] == {"x": 1}


def test_a_bad_row_is_reported_with_its_line(tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"prompt": "p", "completions": ["a"], "labels": [true]}\n{oops\n')
    with pytest.raises(ValueError, match=":2:"):
        read_dataset(data)
    data.write_text('{"prompt": "p", "completions": ["a", "b"], "labels": [true]}\n')
    with pytest.raises(ValueError, match="2 steps but 1 labels"):
        read_dataset(data)

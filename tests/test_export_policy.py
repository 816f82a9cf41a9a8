"""Label policy options, each on a hand-built campaign whose right answer is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exports.formats import LabelPolicy, write_export
from labeling.models import StepLabel
from tests.factories import (
    make_campaign,
    make_labelled,
    make_problem,
    make_review,
    make_solution,
)

pytestmark = pytest.mark.django_db

STEPS = ["s0", "s1", "s2", "s3"]


def export(campaign, tmp_path: Path, fmt: str = "trl", **policy) -> dict[str, list[dict]]:
    """The rows of each split file, by split name."""
    manifest = write_export(
        campaign=campaign, fmt=fmt, out=tmp_path / "out.jsonl", policy=LabelPolicy(**policy)
    )
    return {
        f["split"]: [json.loads(line) for line in (tmp_path / f["name"]).read_text().splitlines()]
        for f in manifest["files"]
    }


def examples(campaign, tmp_path: Path, **policy) -> list[tuple[list[str], list[bool]]]:
    (rows,) = export(campaign, tmp_path, **policy).values()
    return [(r["completions"], r["labels"]) for r in rows]


@pytest.fixture
def campaign():
    return make_campaign()


def test_neutral_counts_as_positive_by_default(campaign, tmp_path):
    make_labelled(solution=make_solution(campaign=campaign, steps=STEPS), ratings=[1, 0, 1])
    assert examples(campaign, tmp_path) == [(["s0", "s1", "s2"], [True, True, True])]


def test_neutral_can_count_as_negative(campaign, tmp_path):
    make_labelled(solution=make_solution(campaign=campaign, steps=STEPS), ratings=[1, 0, 1])
    assert examples(campaign, tmp_path, neutral="negative", cut_after_first_negative=False) == [
        (["s0", "s1", "s2"], [True, False, True])
    ]
    # Cutting then applies to the neutral step too.
    assert examples(campaign, tmp_path, neutral="negative") == [(["s0", "s1"], [True, False])]


def test_it_cuts_a_path_after_its_first_negative_step_by_default(campaign, tmp_path):
    make_labelled(solution=make_solution(campaign=campaign, steps=STEPS), ratings=[1, -1, 1, -1])
    assert examples(campaign, tmp_path) == [(["s0", "s1"], [True, False])]
    assert examples(campaign, tmp_path, cut_after_first_negative=False) == [
        (STEPS, [True, False, True, False])
    ]


def test_each_alternative_becomes_an_example_with_the_chosen_prefix(campaign, tmp_path):
    solution = make_solution(campaign=campaign, steps=STEPS)
    make_labelled(
        solution=solution,
        ratings=[1, -1],
        alternatives={1: [("good", 1), ("bad", -1), ("meh", 0), ("unrated", None)]},
        human_completions={1: "fixed"},
    )
    assert examples(campaign, tmp_path) == [
        (["s0", "s1"], [True, False]),
        (["s0", "good"], [True, True]),
        (["s0", "bad"], [True, False]),
        (["s0", "meh"], [True, True]),
        (["s0", "fixed"], [True, True]),  # a human correction counts as positive
    ]
    assert examples(campaign, tmp_path, alternatives=False) == [(["s0", "s1"], [True, False])]


def test_alternatives_after_the_first_error_are_dropped_when_cutting(campaign, tmp_path):
    solution = make_solution(campaign=campaign, steps=STEPS)
    make_labelled(solution=solution, ratings=[-1, 1, 1], alternatives={2: [("late", 1)]})
    assert examples(campaign, tmp_path) == [(["s0"], [False])]
    assert (["s0", "s1", "late"], [False, True, True]) in examples(
        campaign, tmp_path, cut_after_first_negative=False
    )


def test_a_step_the_labeler_wrote_is_a_positive_path_step(campaign, tmp_path):
    """PRM800K phase 1: a human completion replaces every rejected candidate in the path."""
    solution = make_solution(
        campaign=campaign, steps=["s0", "my own step", "s2"], pre_generated=False
    )
    assignment = make_labelled(
        solution=solution, ratings=[1, None, 1], alternatives={1: [("c0", -1), ("c1", -1)]}
    )
    StepLabel.objects.filter(assignment=assignment, step__index=1).update(
        completion_index=None,
        human_completion={"text": "my own step", "rating": None, "source": "human"},
    )
    assert examples(campaign, tmp_path) == [
        (["s0", "my own step", "s2"], [True, True, True]),
        (["s0", "c0"], [True, False]),
        (["s0", "c1"], [True, False]),
    ]


def test_an_unrated_step_ends_the_path(campaign, tmp_path):
    make_labelled(solution=make_solution(campaign=campaign, steps=STEPS), ratings=[1, 1, None])
    assert examples(campaign, tmp_path) == [(["s0", "s1"], [True, True])]


@pytest.fixture
def three_annotators(campaign):
    solution = make_solution(campaign=campaign, steps=STEPS)
    make_labelled(solution=solution, ratings=[1, 1, -1])
    make_labelled(solution=solution, ratings=[1, -1])
    make_labelled(solution=solution, ratings=[1, 1, 1, 1])
    return solution


def test_several_annotators_give_the_majority_per_step_by_default(
    campaign, three_annotators, tmp_path
):
    # Step 2: one negative, one positive (the second annotator stopped): a tie, so negative.
    assert examples(campaign, tmp_path) == [(["s0", "s1", "s2"], [True, True, False])]


def test_a_tie_between_annotators_goes_to_the_more_negative_label(campaign, tmp_path):
    solution = make_solution(campaign=campaign, steps=STEPS)
    make_labelled(solution=solution, ratings=[1, 1])
    make_labelled(solution=solution, ratings=[1, -1])
    assert examples(campaign, tmp_path) == [(["s0", "s1"], [True, False])]


def test_unanimous_keeps_the_steps_before_the_first_disagreement(
    campaign, three_annotators, tmp_path
):
    assert examples(campaign, tmp_path, annotators="unanimous") == [(["s0"], [True])]


def test_unanimous_agreement_is_on_labels_after_the_neutral_rule(campaign, tmp_path):
    solution = make_solution(campaign=campaign, steps=STEPS)
    make_labelled(solution=solution, ratings=[1, 0])
    make_labelled(solution=solution, ratings=[0, 1])
    assert examples(campaign, tmp_path, annotators="unanimous") == [(["s0", "s1"], [True, True])]
    assert examples(campaign, tmp_path, annotators="unanimous", neutral="negative") == []


def test_each_annotator_can_give_a_record_of_their_own(campaign, three_annotators, tmp_path):
    assert examples(campaign, tmp_path, annotators="each") == [
        (["s0", "s1", "s2"], [True, True, False]),
        (["s0", "s1"], [True, False]),
        (STEPS, [True, True, True, True]),
    ]


def test_quality_control_and_screening_solutions_can_be_left_out(campaign, tmp_path):
    regular = make_solution(campaign=campaign, steps=["r"])
    qc = make_solution(campaign=campaign, steps=["q"], kind="qc", gold=[1])
    screening = make_solution(campaign=campaign, steps=["x"], kind="screening", gold=[1])
    for solution in (regular, qc, screening):
        make_labelled(solution=solution, ratings=[1])
    assert [c for c, _ in examples(campaign, tmp_path)] == [["r"], ["q"], ["x"]]
    assert [c for c, _ in examples(campaign, tmp_path, include_quality_control=False)] == [
        ["r"],
        ["x"],
    ]
    assert [c for c, _ in examples(campaign, tmp_path, include_screening=False)] == [["r"], ["q"]]


def test_rejected_work_is_never_exported_and_reviewed_only_keeps_the_accepted(campaign, tmp_path):
    accepted = make_labelled(solution=make_solution(campaign=campaign, steps=["a"]), ratings=[1])
    make_review(assignment=accepted, decision="accepted")
    make_labelled(solution=make_solution(campaign=campaign, steps=["u"]), ratings=[1])
    rejected = make_labelled(solution=make_solution(campaign=campaign, steps=["r"]), ratings=[1])
    make_review(assignment=rejected, decision="rejected")
    assert [c for c, _ in examples(campaign, tmp_path)] == [["a"], ["u"]]
    assert [c for c, _ in examples(campaign, tmp_path, reviewed_only=True)] == [["a"]]


def test_a_reviewers_correction_replaces_the_rating(campaign, tmp_path):
    assignment = make_labelled(
        solution=make_solution(campaign=campaign, steps=STEPS), ratings=[1, 1, 1]
    )
    make_review(assignment=assignment, corrections={1: -1})
    assert examples(campaign, tmp_path) == [(["s0", "s1"], [True, False])]


def test_only_submitted_assignments_are_exported(campaign, tmp_path):
    solution = make_solution(campaign=campaign, steps=STEPS)
    make_labelled(solution=solution, ratings=[1, -1], status="leased")
    make_labelled(solution=solution, ratings=[1, 1, 1], status="skipped")
    assert examples(campaign, tmp_path) == []


def _problems_with_solutions(campaign, n: int) -> None:
    for i in range(n):
        problem = make_problem(campaign=campaign, text=f"Problem number {i}: what is {i} + {i}?")
        for j in range(2):
            solution = make_solution(campaign=campaign, problem=problem, steps=[f"p{i} s{j}"])
            make_labelled(solution=solution, ratings=[1])


def test_the_split_keeps_every_problem_whole_and_is_deterministic(campaign, tmp_path):
    _problems_with_solutions(campaign, 40)
    first = export(campaign, tmp_path / "a", test_fraction=0.3)
    second = export(campaign, tmp_path / "b", test_fraction=0.3)
    assert first == second
    problems = {
        split: {r["completions"][0].split()[0] for r in rows} for split, rows in first.items()
    }
    assert set(problems) == {"train", "test"}
    assert problems["train"].isdisjoint(problems["test"])
    assert len(problems["train"] | problems["test"]) == 40
    assert all(len(rows) % 2 == 0 for rows in first.values())  # both solutions of each problem
    assert 0 < len(problems["test"]) < 40
    other_seed = export(campaign, tmp_path / "c", test_fraction=0.3, split_seed=1)
    assert other_seed != first


def test_the_split_depends_on_the_problem_text_only(tmp_path):
    """The same problem lands in the same split in another campaign, whatever its ids."""
    splits = []
    for k in range(2):
        campaign = make_campaign()
        _problems_with_solutions(campaign, 10 + 5 * k)  # different ids, a shared first ten
        rows = export(campaign, tmp_path / str(k), test_fraction=0.5)
        splits.append(
            {r["completions"][0].split()[0]: split for split, rs in rows.items() for r in rs}
        )
    shared = {p for p in splits[0] if p in splits[1]}
    assert len(shared) == 10
    assert all(splits[0][p] == splits[1][p] for p in shared)


MATH500_PROBLEM = (
    "Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.  Enter your "
    "answer in the form $(r,\\theta),$ where $r > 0$ and $0 \\le \\theta < 2 \\pi.$"
)


@pytest.fixture
def math500_campaign(campaign):
    held_out = make_problem(campaign=campaign, text=MATH500_PROBLEM)
    held_out_solution = make_solution(campaign=campaign, problem=held_out, steps=["m"])
    make_labelled(solution=held_out_solution, ratings=[1])
    make_labelled(solution=make_solution(campaign=campaign, steps=["o"]), ratings=[1])
    return campaign


def test_math500_problems_can_be_forced_into_test(math500_campaign, tmp_path):
    rows = export(math500_campaign, tmp_path, math500="test")
    assert [r["completions"] for r in rows["test"]] == [["m"]]
    assert [r["completions"] for r in rows["train"]] == [["o"]]


def test_math500_problems_can_be_excluded(math500_campaign, tmp_path):
    rows = export(math500_campaign, tmp_path, math500="exclude")
    assert [r["completions"] for r in rows["all"]] == [["o"]]


def test_math500_problems_are_left_to_the_hash_by_default_and_counted(math500_campaign, tmp_path):
    manifest = write_export(campaign=math500_campaign, fmt="trl", out=tmp_path / "x.jsonl")
    assert manifest["split"]["math500_problems_seen"] == 1
    assert manifest["counts"]["all"]["records"] == 2


def test_math500_is_kept_as_its_500_problem_hashes_alone():
    from exports.policy import MATH500_HASHES_PATH, is_math500, math500_hashes, problem_sha256

    lines = MATH500_HASHES_PATH.read_text(encoding="ascii").splitlines()
    assert len(lines) == len(set(lines)) == len(math500_hashes()) == 500
    assert all(len(h) == 64 and set(h) <= set("0123456789abcdef") for h in lines)
    assert lines == sorted(lines)
    assert sorted(p.name for p in MATH500_HASHES_PATH.parent.iterdir()) == [
        "LICENSE.txt",
        "SOURCE.md",
        "problem_sha256.txt",
    ]
    # the text as a campaign holds it: surrounding space aside, exact
    assert problem_sha256(f"  {MATH500_PROBLEM}\n") == problem_sha256(MATH500_PROBLEM)
    assert is_math500(f"\n{MATH500_PROBLEM} ")
    assert not is_math500(MATH500_PROBLEM.replace("polar", "spherical"))

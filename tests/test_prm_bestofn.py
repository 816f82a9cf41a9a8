"""The best-of-N curve (``prm.bestofn``) on a hand-built fixture; the outcome objective (ORM)."""

from __future__ import annotations

import json
import random

import pytest

from prm.bestofn import Candidate, curve, format_curve, n_values
from prm.data import Solution, split_of
from prm.training import outcome_rows


def _c(answer, correct, score):
    return Candidate(answer, correct, {"prm": score})


# Problem A: two right "4"s scored low, two wrong "5"s scored high. Problem B: three solutions,
# one without an answer.
A = [_c("4", True, 0.2), _c("5", False, 0.9), _c("5", False, 0.8), _c("4", True, 0.1)]
B = [_c("7", True, 0.6), _c("8", False, 0.5), _c(None, False, 0.4)]


def test_n_runs_in_powers_of_two_up_to_the_most_solutions():
    assert n_values(4) == [1, 2, 4]
    assert n_values(8) == [1, 2, 4, 8]
    assert n_values(6) == [1, 2, 4, 6]
    assert n_values(1) == [1]


def test_the_curve_matches_a_hand_computation():
    result = curve([A, B, [_c("1", True, 0.5)]])  # a problem with one solution is left out
    assert result["problems"] == 2 and result["n"] == [1, 2, 4]
    assert result["problems_at_n"] == [2, 2, 1]
    acc = result["accuracy"]
    one = (2 / 4 + 1 / 3) / 2  # at N=1 every method picks the one solution
    # Majority by hand. N=2, A: {a1,a2} tie -> first answer "4" right; {a1,a3} right;
    # {a1,a4} right; {a2,a3} wrong; {a2,a4} tie -> "5" wrong; {a3,a4} tie -> "5" wrong: 3/6.
    # B: {b1,b2} tie -> "7" right; {b1,b3} right (b3 has no answer); {b2,b3} wrong: 2/3.
    # N=4 (B: all 3): A tie 2-2 -> "4" first, right; B tie 1-1 -> "7" first, right.
    assert acc["majority"] == pytest.approx([one, (3 / 6 + 2 / 3) / 2, 1.0])
    # The PRM picks the highest score: A's wrong 0.9, B's right 0.6.
    # N=2, A: the higher-scored of each pair is right only in {a1,a4}: 1/6; B: {b1,b2} right,
    # {b1,b3} right, {b2,b3} wrong: 2/3.
    assert acc["prm"] == pytest.approx([one, (1 / 6 + 2 / 3) / 2, 0.5])
    assert acc["random"] == pytest.approx([one] * 3)
    # Oracle: any right answer. N=2, A: all pairs but {a2,a3}: 5/6; B: 2/3.
    assert acc["oracle"] == pytest.approx([one, (5 / 6 + 2 / 3) / 2, 1.0])


def test_the_oracle_bounds_every_method_at_every_n():
    rng = random.Random(3)
    groups = []
    for _ in range(40):
        m = rng.randint(2, 9)
        groups.append(
            [
                Candidate(
                    rng.choice(["1", "2", "3", None]),
                    rng.random() < 0.4,
                    {"prm": rng.random(), "orm": rng.random()},
                )
                for _ in range(m)
            ]
        )
    result = curve(groups, samples=64, seed=1)
    assert result["n"] == [1, 2, 4, 8, 9]
    oracle = result["accuracy"]["oracle"]
    for name, values in result["accuracy"].items():
        for o, v in zip(oracle, values, strict=True):
            assert v <= o + 1e-12, name
    assert oracle == sorted(oracle)  # more solutions, more chances
    assert "oracle" in format_curve(result | {"split": "all", "solutions": 0})


def test_sampled_subsets_are_seeded():
    groups = [[_c(str(i % 3), i % 3 == 0, i / 20) for i in range(20)] for _ in range(3)]
    assert curve(groups, samples=16, seed=5) == curve(groups, samples=16, seed=5)


def test_outcome_rows_label_every_step_with_the_final_answers_correctness():
    rows = outcome_rows(
        [
            Solution("p", ("a", "b"), (True, False), "4", True),
            Solution("p", ("a", "c"), None, "5", False),
            Solution("p", ("a",), (True,), None, None),  # ungraded: left out
        ]
    )
    assert [r.labels for r in rows] == [(True, True), (False, False)]


def _outcome_file(path, problems=80):
    """Problems whose right solutions end "the answer is 4" and wrong ones "... is 5"."""
    with path.open("w") as fh:
        for p in range(problems):
            for k in range(4):
                ok = (p + k) % 2 == 0
                steps = [
                    f"We count the items of set {p} once.",
                    f"Then the answer is {4 if ok else 5}.",
                ]
                row = {"prompt": f"Problem {p}: how many?", "completions": steps}
                fh.write(
                    json.dumps(row | {"answer": "4" if ok else "5", "answer_correct": ok}) + "\n"
                )


@pytest.mark.slow
def test_an_outcome_model_learns_final_answer_correctness(tmp_path):
    import prm
    from prm.metrics import auroc

    data = tmp_path / "graded.jsonl"
    _outcome_file(data)
    metrics = prm.train(data, tmp_path / "orm", objective="outcome", progress=False, epochs=4)
    assert metrics["train_rows"] > 0
    orm = prm.load(tmp_path / "orm")
    assert orm.config["train_config"]["objective"] == "outcome"
    rows = [s for s in prm.read_dataset(data).solutions if split_of(s.problem) == "test"]
    scores = orm.solution_scores(rows, aggregate="last")
    assert auroc([s.answer_correct for s in rows], scores) > 0.9


def test_an_outcome_model_needs_graded_answers(tmp_path):
    import prm

    rows = [Solution("p", ("a",), (True,))]
    with pytest.raises(ValueError, match="graded final answer"):
        prm.train(rows, tmp_path / "orm", objective="outcome", progress=False)
    with pytest.raises(ValueError, match="objective"):
        prm.train(rows, tmp_path / "x", objective="reward", progress=False)

"""Final-answer extraction and grading with math-verify in worker processes, bounded by size."""

from __future__ import annotations

import json

import pytest

from labeling.grading import Grader, Limits, extract_answer, grade, solutions_grade
from labeling.models import Solution
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_problem, make_solution


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("So a pencil costs 29 cents.\n\n# Answer\n\n29", "29"),  # PRM800K
        ("She makes 9 * 2 = $<<9*2=18>>18\nA: 18", "18"),  # GSM8K model solutions
        ("Janet sells 16 - 3 - 4 = 9 eggs.\n#### 18", "18"),  # GSM8K reference
        ("First $\\boxed{1}$, finally $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),  # last boxed
        ("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("Along the way $\\boxed{3}$.\n\n# Answer\n\n4", "4"),  # the end marker wins
        ("Cut off: \\boxed{\\frac{1}{2", None),
        ("No answer here.", None),
        ("", None),
    ],
)
def test_it_extracts_the_final_answer(text, answer):
    assert extract_answer(text) == answer


@pytest.mark.parametrize(
    ("answer", "truth", "expected"),
    [
        ("0.5", "\\frac{1}{2}", True),
        ("\\frac{1}{2}", "0.5", True),
        ("\\dfrac{1}{9}", "\\frac19", True),
        ("28,800", "28800", True),
        ("900,\\!000", "900000", True),
        ("7200", "28800", False),
        ("007", "7", True),
        ("-3", "3", False),
        ("[1,2)", "[1, 2)", True),
        ("(1,2]", "[1,2)", False),
        ("x \\in [2, 5)", "[2,5)", True),
        ("\\text{(C)}", "\\text{(C)}", True),
        ("C", "\\text{(C)}", True),
        ("Monday", "\\text{Monday}", True),
        ("\\text{Tuesday}", "\\text{Monday}", False),
        ("$5$", "5", True),
        ("", "5", None),
        (None, "5", None),
        ("5", "", None),
    ],
)
def test_it_grades_answers_like_a_mathematician(answer, truth, expected):
    assert grade(answer, truth) is expected


def test_a_garbage_answer_is_never_correct():
    assert grade("garbage!!", "5") is not True
    assert grade("\\frac{", "5") is not True


def test_a_pathological_answer_is_undecided_before_math_verify_works_on_it():
    # (x+1)^{2000} took 13 s inside math-verify; its size is refused before it gets there
    assert grade("(x+1)^{2000}", "(x+2)^{2000}") is None


@pytest.mark.slow
def test_a_worker_past_its_cpu_budget_is_stopped_and_replaced():
    # bounds loosened so that math-verify really works on (x+1)^{2000} (13 CPU s) and the
    # kernel stops the worker at its budget of 1 CPU second
    loose = Limits(exponent=10_000, terms=10_000)
    grader = Grader(workers=1, limits=loose, cpu_budget_s=1)
    try:
        results = grader.grade_many([("(x+1)^{2000}", "(x+2)^{2000}"), ("1/2", "0.5"), ("3", "4")])
    finally:
        grader.close()
    assert grader.killed == 1
    assert results == {
        ("(x+1)^{2000}", "(x+2)^{2000}"): None,
        ("1/2", "0.5"): True,
        ("3", "4"): False,
    }


@pytest.mark.slow
def test_it_agrees_with_qwen_on_at_least_995_of_its_800_samples():
    records = [
        json.loads(line) for line in (FIXTURES / "qwen25math_math_samples" / "grading.jsonl").open()
    ]
    samples = [
        (extract_answer(tail), r["gt"], score)
        for r in records
        for tail, score in zip(r["response_tail"], r["score"], strict=True)
    ]
    results = Grader.shared().grade_many((a, t) for a, t, _ in samples)
    agree = sum(bool(results[(a, t)]) == score for a, t, score in samples)
    assert len(samples) == 800
    assert agree / len(samples) >= 0.995, f"{agree}/800 agree"


@pytest.mark.django_db
def test_grading_solutions_sets_answer_is_correct_and_leaves_undecidable_ones_null():
    campaign = make_campaign()
    problem = make_problem(campaign=campaign, ground_truth_answer="\\frac{1}{2}")
    right = make_solution(campaign=campaign, problem=problem, answer="0.5")
    wrong = make_solution(campaign=campaign, problem=problem, answer="2")
    none = make_solution(campaign=campaign, problem=problem, answer=None)
    no_truth = make_solution(
        campaign=campaign,
        problem=make_problem(campaign=campaign, ground_truth_answer=""),
        answer="3",
    )

    result = solutions_grade(solutions=Solution.objects.filter(campaign=campaign))

    assert (result.solutions, result.graded, result.pairs) == (2, 2, 2)
    graded = {s.pk: s.answer_is_correct for s in Solution.objects.all()}
    assert graded == {right.pk: True, wrong.pk: False, none.pk: None, no_truth.pk: None}


@pytest.mark.django_db
def test_regrading_revisits_solutions_already_graded():
    campaign = make_campaign()
    problem = make_problem(campaign=campaign, ground_truth_answer="4")
    solution = make_solution(
        campaign=campaign, problem=problem, answer="4", answer_is_correct=False
    )

    solutions_grade(solutions=Solution.objects.all())
    solution.refresh_from_db()
    assert solution.answer_is_correct is False  # only ungraded ones by default

    solutions_grade(solutions=Solution.objects.all(), regrade=True)
    solution.refresh_from_db()
    assert solution.answer_is_correct is True

"""The exact checks of a step's mathematics (prm.checks): each on true, false, undecidable and
pathological steps; time limits fail safe; the bow featuriser's output with checks is
deterministic."""

from __future__ import annotations

import time

import pytest

import prm
from prm.backbones import build_backbone
from prm.checks import CHECKS, SolutionChecks, check_solution, time_limit
from prm.latex import Unevaluable, parse


def fired(problem: str, steps: list[str]) -> list[str]:
    """The names of the checks that fired on the last step."""
    return [f.check for f in check_solution(problem, steps)[-1]]


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ("We have $7 \\times 8 = 56$.", []),
        ("We have $7 \\times 8 = 54$.", ["arithmetic"]),
        ("So $\\frac{3}{4} \\cdot 8 = 6$ and $\\sqrt{16} = 4$.", []),
        ("So $\\frac{3}{4} \\cdot 8 = 5$.", ["arithmetic"]),
        ("there are 60 * 7 = 410 seconds", ["arithmetic"]),  # plain text, outside the maths
        ("Then $\\binom{5}{2} = 10$ and $4! = 24$.", []),  # through latex2sympy2_extended
        ("Then $\\binom{5}{2} = 12$.", ["arithmetic"]),
        ("$22/7 = 3.14$", []),  # a stated decimal carries its own rounding
        ("$2\\frac{1}{2} + 1 = 3\\frac{1}{2}$", []),  # mixed numbers
        ("Is $125^2 + 120^2 = 117^2$?", []),  # a question claims nothing
        ("$x + 1 = 3$", []),  # an equation to solve: undecidable alone
    ],
)
def test_arithmetic(step, expected):
    assert fired("", [step]) == expected


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ("$(x+1)^2 = x^2 + 2x + 1$", []),
        ("$(x+1)^2 = x^2 + 2x + 1 = x^2 + x + 1$", ["algebra"]),  # a rewrite that is not one
        ("$2(x + 3) = 2x + 6 = 2x + 5$", ["algebra"]),
        ("$2x + 6 = 2x + 5$", ["algebra"]),  # no solution at all
        ("$x^2 - 5x + 6 = 0$", []),
        ("$a + 6 = b - 6 = 5c$", []),  # a system of conditions, not rewrites
    ],
)
def test_algebra(step, expected):
    assert fired("", [step]) == expected


def test_contradiction_with_the_problem_and_earlier_steps():
    problem = "If $2x + 3 = 11$, what is $x^2$?"
    assert fired(problem, ["So $x = 4$."]) == []
    assert fired(problem, ["So $x = 5$."]) == ["contradiction"]
    assert fired(problem, ["So $x = 4$.", "Then $x^2 = 16$."]) == []
    assert fired(problem, ["So $x = 4$.", "Then $x^2 = 2 \\cdot 4 + 1 = 9$."]) == ["contradiction"]
    # a value the same step derived differently
    assert fired("", ["so $-39 + (n-1)(2) = -1$, or $n = 21$."]) == ["contradiction"]
    # cases and lists are not contradictions
    assert fired("", ["$x^2 = 9$, so $x = 3$ or $x = -3$."]) == []
    assert fired(problem, ["If $x = 7$, then $2x + 3 = 17$."]) == []


def test_condition():
    problem = "Let $x$ be a positive number with $x^2 = 9$."
    assert fired(problem, ["So $x = 3$."]) == []
    assert fired(problem, ["So $x = -3$."]) == ["condition"]
    assert fired("Find $x > 2$ such that $x^2 = 16$.", ["So $x = -4$."]) == ["condition"]


def test_final_answer():
    assert fired("", ["$3 + 4 = 7$.", "# Answer\n\n7"]) == []
    assert fired("", ["$3 + 4 = 7$.", "# Answer\n\n8"]) == ["final_answer"]
    assert fired("", ["$3 + 4 = 7$.", "So the answer is $\\boxed{7}$."]) == []
    assert fired("", ["$3 + 4 = 7$.", "So the answer is $\\boxed{9}$."]) == ["final_answer"]
    assert fired("", ["# Answer\n\n8"]) == []  # nothing computed: undecidable


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ("20% of 50 is 10.", []),
        ("20% of 50 is 1000.", ["percent"]),
        ("So $25\\%$ of the 80 students, that is 2000 students, came.", ["percent"]),
        ("So 2 hours is 120 minutes.", []),
        ("So 2 hours is 200 minutes.", ["units"]),
        ("There are 60 minutes in an hour.", []),
        ("There are 100 minutes in an hour.", ["units"]),
        ("The train travels 1 mile in 1 minute.", []),  # different dimensions: nothing to say
    ],
)
def test_percent_and_units(step, expected):
    assert fired("", [step]) == expected


@pytest.mark.parametrize(
    "step",
    [
        "$(x+1)^{2000} = x^{2000} + 1$",
        "$2^{10^{100}} = 7$",
        "$10^{10^{10}} - 1 = 9$",
        "$100! = 5$",
        "$" + "(" * 400 + "1" + ")" * 400 + " = 2$",
        "$" + " + ".join(["x"] * 3000) + " = 1$",
    ],
)
def test_pathological_input_is_unknown_and_quick(step):
    started = time.perf_counter()
    assert fired("", [step]) == []
    assert time.perf_counter() - started < 2.0


def test_bounded_operations_refuse_rather_than_compute():
    for text in ("2^{10^{10}}", "(x+1)^{2000}", "200!"):
        expr = parse(text)
        with pytest.raises(Unevaluable):
            expr.value(dict.fromkeys(expr.symbols, 1.5))


def test_a_check_that_runs_out_of_time_is_unknown_not_wrong(monkeypatch):
    import prm.checks as checks

    def busy(self, text):
        while True:  # a check that never finishes
            pass

    monkeypatch.setattr(checks.SolutionChecks, "_check", busy)
    context = SolutionChecks("", time_limit_s=0.05)
    assert context.step("We have $7 \\times 8 = 54$.") == []
    # and the context goes on to the next step
    monkeypatch.undo()
    assert [f.check for f in context.step("We have $7 \\times 8 = 54$.")] == ["arithmetic"]


def test_time_limit_leaves_no_timer_behind():
    with time_limit(0.05):
        pass
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_findings_name_the_check_and_a_reason():
    (findings,) = check_solution("", ["We have $7 \\times 8 = 54$."])
    assert findings[0].check in CHECKS
    assert "56" in findings[0].reason
    assert prm.check_solution("", ["$1 + 1 = 2$"]) == [[]]


def test_the_bow_features_with_checks_are_deterministic():
    problem = "If $2x + 3 = 11$, what is $x$?"
    steps = [
        "Subtract 3: $2x = 8$.",
        "So $x = 5$.",  # contradicts the problem
        "We have $7 \\times 8 = 54$.",
        "# Answer\n\n5",
    ]
    first = build_backbone("bow").prepare(problem, steps)
    second = build_backbone("bow").prepare(problem, steps)
    assert [it.features for it in first] == [it.features for it in second]
    assert [it.features["checks"] for it in first][1:3] == [
        [CHECKS.index("contradiction")],
        [CHECKS.index("arithmetic")],
    ]
    without = build_backbone("bow", checks=False).prepare(problem, steps)
    assert all("checks" not in it.features for it in without)


def test_a_check_never_seen_in_training_starts_from_the_pooled_prior():
    from prm.backbones.base import Item

    backbone = build_backbone("bow")
    arithmetic = CHECKS.index("arithmetic")
    items = [Item({"checks": [arithmetic]}, (0,), key=i, labels=(i % 4 == 0,)) for i in range(40)]
    items += [Item({"checks": []}, (0,), key=100 + i, labels=(i % 5 != 0,)) for i in range(200)]
    prior = backbone.fit_prior(items)
    assert prior["arithmetic"] < prior["units"] < 0  # seen and telling; unseen but pooled
    units = backbone.check_bias.weight[CHECKS.index("units"), 0].item()
    assert units == pytest.approx(prior["units"], abs=1e-4)
    assert build_backbone("bow", checks=False).fit_prior(items) == {}

"""The exact checks of a step's mathematics (prm.checks): each on true, false, undecidable and
pathological steps; their work bounded by size (what the LaTeX parser is given included); the
bow featuriser's output with checks is deterministic."""

from __future__ import annotations

import pytest

import prm
from prm.backbones import build_backbone
from prm.checks import CHECKS, SolutionChecks, check_solution
from prm.latex import Unevaluable, fallback_refusal, parse, try_parse


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


PATHOLOGICAL = [
    "$(x+1)^{2000} = x^{2000} + 1$",
    "$2^{10^{100}} = 7$",
    "$10^{10^{10}} - 1 = 9$",
    "$100! = 5$",
    "$" + "(" * 400 + "1" + ")" * 400 + " = 2$",
    "$" + " + ".join(["x"] * 3000) + " = 1$",
    # latex2sympy would compute these while parsing, past any bound (91 s; for ever)
    "$\\binom{1000000}{500000} + \\log 2 = 5$",
    "$x^{x^{x^{x}}}|_{x=99} = 5$",
    "$\\Gamma(100000) \\log 2 = 1$",
]


@pytest.mark.parametrize("step", PATHOLOGICAL)
def test_pathological_input_is_unknown(step):
    assert fired("", [step]) == []


@pytest.mark.parametrize("step", PATHOLOGICAL)
def test_pathological_input_is_refused_before_any_work(step):
    # the left side is refused for its size or notation, or refuses to evaluate past a bound
    expr = try_parse(step.strip("$").split(" = ")[0])
    if expr is not None:
        with pytest.raises(Unevaluable):
            expr.value(dict.fromkeys(expr.symbols, 1.5))


@pytest.mark.parametrize(
    ("part", "refused"),
    [
        ("\\binom{1000000}{500000} + \\log 2", True),
        ("{1000 \\choose 500}\\log 2", True),
        ("\\binom{10^{6}}{3}\\log 2", True),
        ("x^{x^{x^{x}}}|_{x=99}", True),
        ("\\Gamma(5)\\log 2", True),
        ("\\operatorname{eye}(9)\\log 2", True),
        ("\\log(1234567)", True),
        # what real steps give it
        ("\\binom{8}{5}\\binom{8}{3}5!", False),
        ("\\frac{{10\\choose 5}}{2}\\cdot{4!}^2", False),
        ("\\log\\sqrt{\\frac{2007}{2006}}", False),
        ("|\\alpha + 1||\\alpha - 1|", False),
        ("\\lfloor \\sqrt[4]{2016} \\rfloor", False),
    ],
)
def test_the_latex_parser_gets_only_what_it_reads_cheaply(part, refused):
    assert (fallback_refusal(part) is not None) is refused


def test_bounded_operations_refuse_rather_than_compute():
    for text in ("2^{10^{10}}", "(x+1)^{2000}", "200!"):
        expr = parse(text)
        with pytest.raises(Unevaluable):
            expr.value(dict.fromkeys(expr.symbols, 1.5))


def test_a_step_that_cannot_be_evaluated_is_unknown_and_the_solution_goes_on():
    context = SolutionChecks("")
    assert context.step("$10^{400} \\cdot 10^{400} = 7$") == []  # beyond every bound
    assert context.step("x" * 5000 + " $7 \\times 8 = 54$") == []  # too long to read
    assert [f.check for f in context.step("We have $7 \\times 8 = 54$.")] == ["arithmetic"]


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

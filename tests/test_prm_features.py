"""Step features: tokens keep symbols, arithmetic checks, structural tokens see only the past."""

from __future__ import annotations

import pytest

from prm.features import SolutionContext, arithmetic_check, step_facts, tokens


def test_tokens_keep_single_characters_and_symbols():
    assert tokens("So $x = 2$.") == ["so", "$", "x", "=", "2", "$", "."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("there are 60 * 7 = 420 seconds", (1, 0)),
        ("there are 60 * 7 = 410 seconds", (0, 1)),
        ("$\\frac{3}{4} \\cdot 8 = 6$", (1, 0)),
        ("$2^{10} = 1024$ and $1,024 - 24 = 1000$", (2, 0)),
        ("$22/7 = 3.14$", (1, 0)),
        ("\\[\n60 \\cdot 7 = 420\n\\] and \\(10 \\cdot 6 = 61\\)", (1, 1)),
        ("$33 / 5 = 11$", (0, 1)),
        ("$2x + 3 = 7$", (0, 0)),  # a variable: nothing to check
        ("$x - 1 = 0$", (0, 0)),
        ("$f(3) = 6$", (0, 0)),
        ("no equation here", (0, 0)),
    ],
)
def test_arithmetic_check(text, expected):
    assert arithmetic_check(text) == expected


def test_structural_tokens_describe_position_and_new_numbers():
    context = SolutionContext("What is $6 \\times 7$?")
    first = context.structural(step_facts("We multiply 6 by 7."))
    assert "pos:0" in first and "newnums:0" in first
    context.advance(step_facts("We multiply 6 by 7."))
    second = context.structural(step_facts("So $6 \\times 7 = 43$. # Answer"))
    assert "pos:1" in second and "arith:bad" in second and "newnums:1" in second
    assert "answer" in second

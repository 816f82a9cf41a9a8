"""The checks were made cheaper (issue 25: rescoring fast again) without changing what they find:
the ``bow`` features of real steps are those the code made before (a fingerprint taken on it),
with the per-text caches warm or cleared, and the compiled evaluation of an expression is the
walk of its tree it replaced, value for value and error for error."""

from __future__ import annotations

import ast
import hashlib
import math
from functools import _lru_cache_wrapper

import numpy as np
import pytest

from prm import features as features_module
from prm import latex
from prm.backbones.bow import BowBackbone
from prm.checks import solution as solution_module
from prm.checks import step as step_module
from prm.checks import words as words_module
from prm.feature_cache import Features
from tests.test_same_answer_at_any_load import real_solutions

# sha256 of the features below, made by the code before these changes (main at ced84b9).
BEFORE = "691bea526ef5446e37eaa2be59749900e25dcf6c952c7250f2d998ca2585c81c"


def corpus() -> list[tuple[int, str, str, list[str]]]:
    from bench.synthetic import records

    rows = [(problem, list(steps)) for problem, steps in real_solutions()]
    rows += [
        (r["question"]["problem"], r["question"]["pre_generated_steps"])
        for r in records(300, seed=3, labelled=False)
    ]
    return [(i, "-", problem, steps) for i, (problem, steps) in enumerate(rows)]


def fingerprint(built: Features) -> str:
    digest = hashlib.sha256(built.starts.tobytes())
    for name in sorted(built.bags):
        flat, offsets = built.bags[name]
        digest.update(name.encode())
        digest.update(np.asarray(flat, dtype=np.int64).tobytes())
        digest.update(np.asarray(offsets, dtype=np.int64).tobytes())
    return digest.hexdigest()


def _clear_caches() -> None:
    for module in (features_module, latex, step_module, words_module, solution_module):
        for value in vars(module).values():
            if isinstance(value, _lru_cache_wrapper) and value is not latex.load_parser:
                value.cache_clear()


@pytest.fixture(scope="module")
def backbone() -> BowBackbone:
    latex.load_parser()
    return BowBackbone(buckets=1 << 12, dim=4, hidden=4)


def test_the_features_are_those_the_checks_made_before_they_were_made_cheaper(backbone):
    rows = corpus()
    assert sum(len(steps) for *_, steps in rows) > 4000
    assert fingerprint(Features.build(backbone, rows)) == BEFORE


def test_features_with_the_caches_warm_and_cleared_before_every_solution_are_identical(backbone):
    rows = corpus()
    Features.build(backbone, rows)
    warm = Features.build(backbone, rows)  # every per-text cache answers
    cold = []
    for row in rows:
        _clear_caches()
        cold.append(Features.build(backbone, [row]))
    assert fingerprint(Features.concat(cold)) == fingerprint(warm)


def _walk(node: ast.AST, env: dict[str, float]) -> float:
    """The tree walk the compiled evaluation replaced (prm.latex before issue 25), verbatim."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp):
        left, right = _walk(node.left, env), _walk(node.right, env)
        if isinstance(node.op, ast.Pow):
            return latex._power(left, right)
        op = latex._OPS.get(type(node.op))
        if op is None:
            raise latex.Unevaluable("operator")
        if isinstance(node.op, ast.Div) and right == 0:
            raise latex.Unevaluable("division by zero")
        return latex._check(op(left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in latex._OPS:
        return latex._OPS[type(node.op)](_walk(node.operand, env))
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in latex._CONSTANTS:
            return latex._CONSTANTS[node.id]
        raise latex.Unevaluable(f"unknown {node.id}")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = latex._FUNCTIONS.get(node.func.id)
        if function is None:
            raise latex.Unevaluable(f"function {node.func.id}")
        try:
            return latex._check(float(function(*(_walk(a, env) for a in node.args))))
        except (ValueError, OverflowError, TypeError, ZeroDivisionError) as error:
            raise latex.Unevaluable(str(error)) from None
    raise latex.Unevaluable("not arithmetic")


def _outcome(evaluate, *args) -> tuple[str, float | str]:
    try:
        value = evaluate(*args)
    except Exception as error:  # the kind of error is part of the behaviour
        return type(error).__name__, str(error)
    return "value", value if not math.isnan(value) else "nan"


def _walked(expr: latex.Expr, env: dict[str, float]) -> float:
    return latex._check(float(_walk(expr.tree, env)))


def test_compiled_evaluation_gives_the_tree_walks_values_and_errors():
    parts = {"x", "2^{70}", "999999^{60}", "\\frac{1}{0}", "f(x)", "3 \\cdot (x - 2)"}
    parts |= {"\\sqrt{-4}", "5!", "\\binom{7}{3}", "|x - 3|", "-x^{2} + \\frac{x}{4}", "y_1 + 2"}
    for problem, steps in real_solutions():
        for text in [problem, *steps]:
            for span in latex.math_spans(text):
                for clause in latex.clauses(span):
                    parts.update(latex.chain(clause) or [clause])
    exprs = [e for e in map(latex.try_parse, sorted(parts)) if e is not None]
    assert len(exprs) > 700
    envs = [{}, {"x": 2.0}, {"x": 0.0, "y": -1.5, "y_1": 3.0}, {"x": -0.7071, "n": 1e7}]
    for expr in exprs:
        for env in envs:
            assert _outcome(expr.value, env) == _outcome(_walked, expr, env), (expr.text, env)


def test_any_word_finds_what_the_plain_alternation_finds():
    import re

    from prm.checks.base import HYPOTHESIS_WORDS, NEGATION_WORDS, SELECTION_WORDS, any_word

    texts = [text for problem, steps in real_solutions() for text in [problem, *steps]]
    texts += ["NOT so", "Isn't it", "There  are", "there are", "IFFY", "x-if-y", "Works!", "(case)"]
    for pattern in (NEGATION_WORDS, HYPOTHESIS_WORDS, SELECTION_WORDS):
        guard = re.fullmatch(r"\\b\(\?=\[([A-Za-z]+)\]\)\(\?:(.*)\)\\b", pattern.pattern, re.S)
        assert guard is not None, pattern.pattern
        plain = re.compile(rf"\b(?:{guard.group(2)})\b", re.I)  # the word list without the guard
        for text in texts:
            found = [m.span() for m in pattern.finditer(text)]
            assert found == [m.span() for m in plain.finditer(text)], (pattern.pattern, text)
    with pytest.raises(ValueError, match="starts with a letter"):
        any_word("yes|(?:no)")


def _parsed_value(expression: str) -> float | None:
    """``features._evaluate`` as it was: every part that is not a number alone through ast.parse."""
    expression = expression.strip().rstrip(".")
    if latex.PLAIN_NUMBER.fullmatch(expression):
        return float(expression)
    try:
        return float(features_module._evaluate_node(ast.parse(expression, mode="eval").body))
    except (ValueError, SyntaxError, ZeroDivisionError, OverflowError, TypeError, RecursionError):
        return None


def test_two_numbers_and_an_operator_give_what_the_parsed_tree_gives():
    import itertools
    import random

    rng = random.Random(0)
    atoms = ["0", "7", "07", "12", "3.5", "0.25", "1e3", "999999", "1000001", "64", "65", "-3"]
    atoms += ["x", ".5", "5.", "10"]
    spaces = ["", " ", "  ", "\t", "\n", "\x0c", "\r"]
    ends = ["", ".", " .", " ..", ". ", "  "]
    written = [
        rng.choice(spaces) + a + rng.choice(spaces) + op + rng.choice(spaces) + b + rng.choice(ends)
        for a, op, b in itertools.product(atoms, ["+", "-", "*", "/", "**", "^", "//", "%"], atoms)
        for _ in range(3)
    ]
    for problem, steps in real_solutions():  # and every part of a real step's numeric equations
        for text in [problem, *steps]:
            arithmetic = features_module._to_python_arithmetic(text)
            runs = features_module._RUN.findall(arithmetic)
            written += [part for run in runs for part in run.split("=")]
    assert sum(bool(features_module._TWO_NUMBERS.fullmatch(w.strip(" ."))) for w in written) > 500
    for expression in written:
        assert features_module._evaluate(expression) == _parsed_value(expression), expression

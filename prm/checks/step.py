"""One step on its own: the equations, conditions and final answer it states, and the algebra
(identities, solving in one unknown) the checks use on them."""

from __future__ import annotations

import ast
import math
import re
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from prm.checks.base import POINTS, Finding, close, fmt
from prm.features import STEP_CACHE_SIZE
from prm.latex import (
    ALTERNATIVES,
    Expr,
    Unevaluable,
    chain,
    clauses,
    math_spans,
    try_parse,
)


@dataclass
class Statement:
    """One equation chain of a step: its parts parsed (None where not evaluable)."""

    parts: list[str]
    exprs: list[Expr | None]
    alternatives: bool

    @cached_property  # asked for on every link of the chain; the parts never change
    def symbols(self) -> frozenset[str]:
        return frozenset().union(*(e.symbols for e in self.exprs if e is not None))


@dataclass
class StepMath:
    statements: list[Statement] = field(default_factory=list)
    inequalities: list[tuple[str, str, float]] = field(default_factory=list)
    answer: float | None = None
    answer_text: str = ""
    bare_answer: bool = False  # stated alone, not as the end of an equation
    disjunction: bool = False  # "or" between its equations
    answer_percent: bool = False


_INEQUALITY = re.compile(r"^\s*([A-Za-z])\s*(>|<|\\geq?|\\leq?|\\gt|\\lt)\s*(-?\d+(?:\.\d+)?)\s*$")
_POSITIVE = re.compile(
    r"\b(positive|nonnegative|non-negative)\s+(?:real\s+|odd\s+|even\s+|whole\s+)?"
    r"(?:integer|number|value|root|solution|divisor|length)s?,?\s*(?:(?:for|of)\s+)?"
    r"((?:\$[^$]{1,30}\$(?:\s*,?\s*(?:and\s+)?)?)++)"
)
# The lists of variables are possessive (++): backtracking into "$a$    $b$ ..." (a step with many
# spans and no "is positive") was exponential, 9 s for ten spans.
_POSITIVE_AFTER = re.compile(
    r"((?:\$[^$]{1,30}\$\s*,?\s*(?:and\s+)?)++)\s*(?:is|are|must be|be)\s+(?:both\s+|all\s+)?"
    r"(?:a\s+)?(positive|nonnegative|non-negative)"
)
_ANSWER = re.compile(r"#\s*Answer\s*\n+\s*(.+?)\s*$", re.S)
_DISJUNCTION = re.compile(r"\bor\b|\\pm")


def _boxed(text: str) -> str | None:
    i = text.rfind("\\boxed{")
    if i < 0:
        return None
    depth, start = 0, i + len("\\boxed")
    for k in range(start, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : k]
    return None


@lru_cache(maxsize=STEP_CACHE_SIZE)
def read_step(text: str) -> StepMath:
    """The equations, inequalities and final answer a step states."""
    out = StepMath()
    for span in math_spans(text.replace("\\boxed", "")):
        for clause in clauses(span):
            m = _INEQUALITY.match(clause)
            if m:
                ops = {"\\ge": ">=", "\\geq": ">=", "\\le": "<=", "\\leq": "<=", "\\gt": ">"}
                out.inequalities.append((m.group(1), ops.get(m.group(2), m.group(2)), float(m[3])))
                continue
            parts = chain(clause)
            if parts is None:
                continue
            exprs = [try_parse(p) for p in parts]
            if sum(e is not None for e in exprs) >= 2 or (len(parts) == 2 and exprs[0]):
                out.statements.append(Statement(parts, exprs, bool(ALTERNATIVES.search(span))))
    if "positive" in text or "negative" in text:  # the words both patterns need
        for m in _POSITIVE.finditer(text):
            op = ">" if m.group(1) == "positive" else ">="
            for v in re.findall(r"(?<![\\\w])([a-z])(?!\w)", m.group(2)):
                out.inequalities.append((v, op, 0.0))
        for m in _POSITIVE_AFTER.finditer(text):
            op = ">" if m.group(2) == "positive" else ">="
            for v in re.findall(r"\$\s*([a-z])\s*\$", m.group(1)):
                out.inequalities.append((v, op, 0.0))
    out.disjunction = bool(_DISJUNCTION.search(text))
    answer = _boxed(text)
    if answer is None:
        m = _ANSWER.search(text) if "Answer" in text else None
        answer = m.group(1).strip().strip("$") if m else None
    if answer is not None:
        expr = try_parse(answer.split("=")[-1])
        if expr is not None and not expr.symbols:
            with suppress(Unevaluable):
                out.answer, out.answer_text = expr.value(), answer
                out.bare_answer = not re.search(r"=\s*\$?\s*\\boxed", text) and "=" not in answer
                out.answer_percent = "%" in answer
    return out


def identical(a: Expr, b: Expr, env: dict[str, float]) -> bool | None:
    """Whether ``a`` and ``b`` agree at a few fixed points (None: cannot evaluate)."""
    free = sorted((a.symbols | b.symbols) - env.keys())
    try:
        for k, point in enumerate(POINTS):
            values = {**env, **{s: point + 0.11 * j * (k + 1) for j, s in enumerate(free)}}
            if not close(a.value(values), b.value(values)):
                return False
        return True
    except (Unevaluable, ZeroDivisionError):
        return None


def difference_is_constant(a: Expr, b: Expr) -> float | None:
    free = sorted(a.symbols | b.symbols)
    try:
        values = set()
        for k, point in enumerate(POINTS):
            env = {s: point + 0.37 * j * (k + 2) for j, s in enumerate(free)}
            values.add(round(a.value(env) - b.value(env), 9))
        return values.pop() if len(values) == 1 else None
    except Unevaluable:
        return None


def listed_values(facts: StepMath, symbols: set[str]) -> list[Finding]:
    """``(x-1)(x+3)(x-3) = 0``, so ``x = 1``, ``x = -3`` and ``x = 3``: when a step lists values
    of one variable after an equation in that variable alone, each must solve it."""
    found = []
    for symbol in sorted(symbols):
        values, equations = [], []
        for st in facts.statements:
            first, last = st.exprs[0], st.exprs[-1]
            if first is not None and isinstance(first.tree, ast.Name) and first.tree.id == symbol:
                if last is not None and not last.symbols:
                    with suppress(Unevaluable):
                        values.append(last.value())
            elif st.symbols == {symbol} and len(st.exprs) == 2 and None not in st.exprs:
                equations.append(st)
        for st in equations:
            a, b = st.exprs
            assert a is not None and b is not None  # equations hold no unread side
            wrong = []
            for v in values:
                with suppress(Unevaluable):
                    if not close(a.value({symbol: v}), b.value({symbol: v})):
                        wrong.append(v)
            if wrong:
                claim = f"{st.parts[0]} = {st.parts[1]}"
                reason = f"{symbol} = {fmt(wrong[0])} does not solve {claim}"
                found.append(Finding("contradiction", reason))
                return found
    return found


def solve_for(a: Expr, b: Expr, symbol: str, env: dict[str, float]) -> list[float] | None:
    """Real roots of ``a = b`` in ``symbol`` when it is a polynomial of degree 1 or 2 there."""
    try:

        def f(x: float) -> float:
            return a.value({**env, symbol: x}) - b.value({**env, symbol: x})

        f0, f1, f2, f3 = f(0.0), f(1.0), f(2.0), f(0.5)
    except Unevaluable:
        return None
    c2 = (f2 - 2 * f1 + f0) / 2
    c1 = f1 - f0 - c2
    if not close(c2 * 0.25 + c1 * 0.5 + f0, f3):
        return None  # not a polynomial of degree <= 2
    if abs(c2) < 1e-12:
        return None if abs(c1) < 1e-12 else [-f0 / c1]
    disc = c1 * c1 - 4 * c2 * f0
    if disc < -1e-9:
        return []
    root = math.sqrt(max(disc, 0.0))
    return sorted({(-c1 - root) / (2 * c2), (-c1 + root) / (2 * c2)})

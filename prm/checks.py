"""Exact checks of a step's mathematics: what a step states that can be shown wrong.

A step's words say little about whether its arithmetic is right; these checks read its equations
(``prm.latex``) and test them against themselves, against what the problem and the earlier steps
established, and against simple facts (percentages, units). Each check answers only when it can
decide; anything it cannot parse, evaluate or decide within the time limit is *unknown*, never
wrong. The checks and what fires them:

- ``arithmetic``: a purely numeric equation that does not hold (``7 \\times 8 = 54``);
- ``algebra``: a rewrite that is not one (``(x+1)^2 = x^2 + x + 1`` inside a chain), or an
  equation with no solution at all (``2x + 6 = 2x + 5``);
- ``contradiction``: an equation that fails with the values the problem or earlier steps fixed
  (``x = 4`` before, ``2x + 1 = 7`` now), or a variable given a value none of its earlier ones;
- ``condition``: a value that breaks a stated condition (``x > 0`` before, ``x = -3`` now);
- ``final_answer``: a final answer that is not the last value computed nor any value stated;
- ``percent`` and ``units``: ``20% of 50 is 1000``, ``2 hours is 200 minutes``.

``check_solution(problem, steps)`` returns each step's findings (check name and a short reason).
The ``bow`` backbone turns them into features; they run where featurising runs (in the scorer's
and active learning's forked worker processes).
"""

from __future__ import annotations

import ast
import math
import re
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import lru_cache

from prm.features import arithmetic_failures, arithmetic_results
from prm.latex import (
    ALTERNATIVES,
    DOLLAR,
    Expr,
    Unevaluable,
    chain,
    clauses,
    load_parser,
    math_spans,
    strip_math,
    try_parse,
)

CHECKS = (
    "arithmetic",
    "algebra",
    "contradiction",
    "condition",
    "final_answer",
    "percent",
    "units",
)
STEP_TIME_LIMIT = 0.5  # seconds for all checks of one step; typical steps take well under 5 ms
MAX_STEP_CHARACTERS = 4000
MEMORY_STEPS = 5  # how many steps back a value still counts for the contradiction check
_POINTS = (0.3719, 1.6183, -0.7071)  # where identities are tested (fixed: checks are deterministic)
# Words that make a step's equations not claims: a negation, a question, a check of a guess.
_NEGATION = re.compile(
    r"\b(?:not|no solution|impossible|contradiction|never|cannot|can't|isn't|wrong|false|"
    r"incorrect|mistake)\b",
    re.I,
)
# Words of hypotheses and cases: a variable may take another value there without contradiction.
_HYPOTHESIS = re.compile(
    r"\b(?:if|when|whenever|suppose|assume|case|cases|try|trying|either|say|consider|would|"
    r"check|whether|instead|otherwise|for example|another|test|testing|plug|plugging|"
    r"substitute|substituting|works?|correct)\b",
    re.I,
)
# Answers that count, select or combine in words: the last value computed need not be the answer.
_SELECTION = re.compile(
    r"\b(?:how many|number of|possible|ways|solutions|values|such|pairs|there (?:are|is)|"
    r"sum|product|total|digits?|base|largest|smallest|greatest|least|maximum|minimum|prime|"
    r"factors?|divisors?|multiples?|remainder|integers?)\b",
    re.I,
)
_ROUNDING = re.compile(
    r"\b(?:round|rounded|rounding|nearest|approximately|roughly|estimate)\b|\\approx"
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One check that fired on a step, and why."""

    check: str
    reason: str


class CheckTimeout(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`CheckTimeout` in this block after ``seconds`` of wall time.

    Uses ``SIGALRM``, which only the main thread may set (as in the scorer's and active learning's
    forked workers, and a Celery prefork child). Elsewhere the block runs unlimited; every
    operation the checks do is bounded anyway (``prm.latex``), so this is a second line of defence.
    """
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def expire(signum, frame):
        raise CheckTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    old_delay, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_delay:  # someone else's timer was running: give it back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - seconds, 1e-3))


def close(a: float, b: float, written: str = "", rounding: bool = False) -> bool:
    """Equal up to float error, or up to the rounding a written decimal result implies."""
    tolerance = 1e-9 * max(1.0, abs(a), abs(b))
    decimals = re.fullmatch(r"-?\d+\.(\d+)", written.strip())
    if decimals:
        tolerance = max(tolerance, 0.5 * 10 ** -len(decimals.group(1)) + 1e-12)
    elif rounding and b == int(b) and a != int(a):
        tolerance = max(tolerance, 1.0)
    return abs(a - b) <= tolerance


def _fmt(x: float) -> str:
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else f"{x:.6g}"


# -- one step on its own -------------------------------------------------------------------------


@dataclass
class Statement:
    """One equation chain of a step: its parts parsed (None where not evaluable)."""

    parts: list[str]
    exprs: list[Expr | None]
    alternatives: bool

    @property
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
    r"((?:\$[^$]{1,30}\$(?:\s*,?\s*(?:and\s+)?)?)+)"
)
_POSITIVE_AFTER = re.compile(
    r"((?:\$[^$]{1,30}\$\s*,?\s*(?:and\s+)?)+)\s*(?:is|are|must be|be)\s+(?:both\s+|all\s+)?"
    r"(?:a\s+)?(positive|nonnegative|non-negative)"
)
_ANSWER = re.compile(r"#\s*Answer\s*\n+\s*(.+?)\s*$", re.S)


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


@lru_cache(maxsize=1 << 15)
def read_step(text: str) -> StepMath:
    """The equations, inequalities and final answer a step states."""
    out = StepMath()
    for span in math_spans(text.replace("\\boxed", "")):
        for clause in clauses(span):
            m = _INEQUALITY.match(clause)
            if m:
                op = {"\\ge": ">=", "\\geq": ">=", "\\le": "<=", "\\leq": "<=", "\\gt": ">"}
                out.inequalities.append((m.group(1), op.get(m.group(2), m.group(2)), float(m[3])))
                continue
            parts = chain(clause)
            if parts is None:
                continue
            exprs = [try_parse(p) for p in parts]
            if sum(e is not None for e in exprs) >= 2 or (len(parts) == 2 and exprs[0]):
                out.statements.append(Statement(parts, exprs, bool(ALTERNATIVES.search(span))))
    for m in _POSITIVE.finditer(text):
        op = ">" if m.group(1) == "positive" else ">="
        for v in re.findall(r"(?<![\\\w])([a-z])(?!\w)", m.group(2)):
            out.inequalities.append((v, op, 0.0))
    for m in _POSITIVE_AFTER.finditer(text):
        op = ">" if m.group(2) == "positive" else ">="
        for v in re.findall(r"\$\s*([a-z])\s*\$", m.group(1)):
            out.inequalities.append((v, op, 0.0))
    out.disjunction = bool(re.search(r"\bor\b|\\pm", text))
    answer = _boxed(text)
    if answer is None:
        m = _ANSWER.search(text)
        answer = m.group(1).strip().strip("$") if m else None
    if answer is not None:
        expr = try_parse(answer.split("=")[-1])
        if expr is not None and not expr.symbols:
            with suppress(Unevaluable):
                out.answer, out.answer_text = expr.value(), answer
                out.bare_answer = not re.search(r"=\s*\$?\s*\\boxed", text) and "=" not in answer
                out.answer_percent = "%" in answer
    return out


def _identical(a: Expr, b: Expr, env: dict[str, float]) -> bool | None:
    """Whether ``a`` and ``b`` agree at a few fixed points (None: cannot evaluate)."""
    free = sorted((a.symbols | b.symbols) - env.keys())
    try:
        for k, point in enumerate(_POINTS):
            values = {**env, **{s: point + 0.11 * j * (k + 1) for j, s in enumerate(free)}}
            if not close(a.value(values), b.value(values)):
                return False
        return True
    except (Unevaluable, ZeroDivisionError):
        return None


def _difference_is_constant(a: Expr, b: Expr) -> float | None:
    free = sorted(a.symbols | b.symbols)
    try:
        values = set()
        for k, point in enumerate(_POINTS):
            env = {s: point + 0.37 * j * (k + 2) for j, s in enumerate(free)}
            values.add(round(a.value(env) - b.value(env), 9))
        return values.pop() if len(values) == 1 else None
    except Unevaluable:
        return None


def _listed_values(facts: StepMath, symbols: set[str]) -> list[Finding]:
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
            wrong = []
            for v in values:
                with suppress(Unevaluable):
                    if not close(a.value({symbol: v}), b.value({symbol: v})):
                        wrong.append(v)
            if wrong:
                claim = f"{st.parts[0]} = {st.parts[1]}"
                reason = f"{symbol} = {_fmt(wrong[0])} does not solve {claim}"
                found.append(Finding("contradiction", reason))
                return found
    return found


def _solve(a: Expr, b: Expr, symbol: str, env: dict[str, float]) -> list[float] | None:
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


# -- percent and units, from the words ---------------------------------------------------------

_NUM = r"(\d[\d,]*(?:\.\d+)?)"
_BARE_PERCENT = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*\\?%\s*$")
_PERCENT_MENTION = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:%|percent\b)\s*of\b[^.;]{0,40}?(?<![\d.])(\d[\d,]*(?:\.\d+)?)"
    r"([^;]{0,120})"
)
_ANY_NUMBER = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?")
_PERCENT = re.compile(
    _NUM + r"\s*(?:\\?%|percent)\s+of\s+(?:the\s+)?\$?\s*\\?\$?" + _NUM + r"\s*\$?\s*"
    r"(?:[a-z]+\s+){0,2}(?:is|are|=|equals|gives|would be|comes to)\s+\$?\\?\$?\s*"
    + _NUM
    + r"(?![\d,]|\.\d)(?!\s*[(\\*×·])"
)
_UNITS = {
    "second": ("time", 1),
    "minute": ("time", 60),
    "hour": ("time", 3600),
    "day": ("time", 86400),
    "week": ("time", 604800),
    "millimeter": ("length", 0.001),
    "centimeter": ("length", 0.01),
    "meter": ("length", 1),
    "kilometer": ("length", 1000),
    "inch": ("length", 0.0254),
    "inche": ("length", 0.0254),
    "foot": ("length", 0.3048),
    "feet": ("length", 0.3048),
    "yard": ("length", 0.9144),
    "mile": ("length", 1609.344),
    "gram": ("mass", 1),
    "kilogram": ("mass", 1000),
    "cent": ("money", 0.01),
    "dollar": ("money", 1),
    "ounce": ("mass", 28.349523125),
    "pound": ("mass", 453.59237),
}
_UNIT = r"(" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")s?\b"
_CONVERSION = re.compile(
    r"(?<![\d.,])(?<![*×/+\-x]\s)(?<![*×/+\-x])"
    + _NUM
    + r"\s*"
    + _UNIT
    + r"\s*(?:is|are|=|equals|is equal to|is the same as|make|makes)\s+"
    r"(?:equal to\s+)?" + _NUM + r"\s*" + _UNIT
)
_PER = re.compile(
    r"\b(?:are|is)\s+" + _NUM + r"\s*" + _UNIT + r"\s+in\s+(?:a|an|one|1|" + _NUM + r")\s+" + _UNIT
)
# "8 feet + 2 feet = 10 feet": two numbers with their nouns, one operation, a result
_UNIT_WORD = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s+([a-z]{3,})\s*([-+*/])\s*(\d+(?:\.\d+)?)\s+([a-z]{3,})"
    r"\s*=\s*(\d+(?:\.\d+)?)(?![\d.]\d)"
)
_TIMES = re.compile(r"(?<=[\d\w])\s*[x×]\s*(?=[\d.])")


def _plain_arithmetic(text: str) -> str:
    """A step's words, ready for the plain-text arithmetic check: no maths, no currency signs,
    ``8 x 2`` as ``8 * 2``, dashes as minus signs."""
    text = strip_math(text).replace(DOLLAR, " ").replace("$", " ")
    return _TIMES.sub(" * ", text.replace("–", "-").replace("—", "-"))


def _worded_failures(text: str) -> list[str]:
    """``8 feet + 2 feet = 13 feet``: one operation on two numbers with their nouns."""
    out = []
    for m in _UNIT_WORD.finditer(text):
        a, noun_a, op, b, noun_b, result = m.groups()
        if noun_a.lower().rstrip("s") != noun_b.lower().rstrip("s"):
            continue  # 3 hours + 20 minutes, 1 teacher + 1 himself: not one quantity
        if re.search(r"[-+*/]\s*$", text[: m.start()]) or re.match(r"\s*[-+*/]", text[m.end() :]):
            continue  # the middle of a longer sum
        x, y = _number(a), _number(b)
        value = {"+": x + y, "-": x - y, "*": x * y, "/": x / y if y else None}[op]
        if value is not None and not close(value, _number(result), result):
            out.append(f"{a} {noun_a} {op} {b} {noun_b} = {result}")
    return out


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _plain(text: str) -> str:
    text = re.sub(r"\\(?:text|mbox|mathrm)\s*\{([^{}]*)\}", r" \1 ", text)
    return re.sub(r"[$]|\\[,;!]|\\\(|\\\)|\\\[|\\\]", " ", text).replace("\\%", "%")


@lru_cache(maxsize=1 << 15)
def word_findings(text: str) -> tuple[Finding, ...]:
    """``percent`` and ``units``: what the words and numbers of one step get wrong by themselves."""
    plain, found = _plain(text), []
    for m in _PERCENT.finditer(plain):
        p, whole, result = (_number(g) for g in m.groups())
        if not close(p * whole / 100, result, m.group(3), bool(_ROUNDING.search(plain))):
            reason = f"{m.group(1)}% of {m.group(2)} is {_fmt(p * whole / 100)}, not {m.group(3)}"
            found.append(Finding("percent", reason))
    if not found:  # "25% of 80 ... 2000": the product, never divided by 100
        for m in _PERCENT_MENTION.finditer(plain):
            p, w = _number(m.group(1)), _number(m.group(2))
            later = [_number(n) for n in _ANY_NUMBER.findall(m.group(3))]
            if p in (0.0, 100.0) or w in (0.0, 1.0):
                continue
            if any(close(r, p * w) and not close(r, p * w / 100) for r in later):
                reason = f"{_fmt(p * w)} is {_fmt(p)} times {_fmt(w)}, not {_fmt(p)}% of it"
                found.append(Finding("percent", reason))
    for m in _CONVERSION.finditer(plain):
        a, unit_a, b, unit_b = _number(m[1]), m[2], _number(m[3]), m[4]
        (kind_a, fa), (kind_b, fb) = _UNITS[unit_a], _UNITS[unit_b]
        if kind_a == kind_b and unit_a != unit_b and not close(a * fa / fb, b, m[3], True):
            found.append(Finding("units", f"{m[1]} {unit_a}s is {_fmt(a * fa / fb)} {unit_b}s"))
    for m in _PER.finditer(plain):
        a, unit_a, count, unit_b = _number(m[1]), m[2], m[3], m[4]
        (kind_a, fa), (kind_b, fb) = _UNITS[unit_a], _UNITS[unit_b]
        n = _number(count) if count else 1.0
        if kind_a == kind_b and unit_a != unit_b and not close(n * fb / fa, a, m[1], True):
            found.append(
                Finding("units", f"{_fmt(n)} {unit_b}(s) is {_fmt(n * fb / fa)} {unit_a}s")
            )
    return found


# -- a solution, step by step --------------------------------------------------------------------

_OPS = {
    ">": lambda x, c: x > c,
    "<": lambda x, c: x < c,
    ">=": lambda x, c: x >= c,
    "<=": lambda x, c: x <= c,
}


class SolutionChecks:
    """What the problem and the steps so far established, and the checks of each next step."""

    def __init__(self, problem: str, *, time_limit_s: float = STEP_TIME_LIMIT) -> None:
        load_parser()
        self.time_limit_s = time_limit_s
        self.known: dict[str, tuple[list[float], int]] = {}  # symbol -> (values, step index)
        self.conditions: dict[str, list[tuple[str, float]]] = {}
        self.results: list[float] = []  # values computed or solved for, in order
        self.previous_numbers: list[float] = []
        self.results_before_previous = 0
        # single-variable equations not solved here (degree > 2): a value found later must fit
        self.pending: dict[str, list[tuple[Expr, Expr, str, int]]] = {}
        self.position = -1  # the problem
        self.verified = 0
        with (
            suppress(CheckTimeout, Unevaluable, RecursionError, ValueError, ArithmeticError),
            time_limit(self.time_limit_s),
        ):
            self._learn(read_step(problem[:MAX_STEP_CHARACTERS]), quiet=True, hypothesis=True)
        self.results = []
        self.position = 0

    def step(self, text: str) -> list[Finding]:
        """The findings of the next step (and remember what it establishes). Never raises:
        a step the checks cannot finish in time has no findings."""
        self.verified = 0
        try:
            with time_limit(self.time_limit_s):
                found = [] if len(text) > MAX_STEP_CHARACTERS else self._check(text)
        except (CheckTimeout, Unevaluable, RecursionError, ValueError, ArithmeticError):
            found = []
        self.position += 1
        unique: dict[str, Finding] = {}
        for f in found:
            unique.setdefault(f.check, f)
        return [unique[name] for name in CHECKS if name in unique]

    def _check(self, text: str) -> list[Finding]:
        plain = _plain(text)
        negated = bool(_NEGATION.search(plain)) or "?" in text
        hypothesis = negated or bool(_HYPOTHESIS.search(plain))
        found = []
        outside = _plain_arithmetic(text)
        if not negated:
            failures = arithmetic_failures(outside) + _worded_failures(outside)
            found += [Finding("arithmetic", f"{run} does not hold") for run in failures]
        self.results += arithmetic_results(outside)
        found += word_findings(text)
        facts = read_step(text)
        rounding = bool(_ROUNDING.search(text))
        earlier = list(self.results)
        found += self._learn(facts, quiet=negated, hypothesis=hypothesis, rounding=rounding)
        numbers = [_number(n) for n in _STEP_NUMBER.findall(_without_answer(text))]
        selects = bool(_SELECTION.search(plain))
        if facts.answer is not None and earlier and facts.bare_answer and not (negated or selects):
            answer = facts.answer
            # numbers of the step before count when it computed nothing we could read
            values = self.results + numbers
            if len(earlier) == self.results_before_previous:
                values += self.previous_numbers
            if not any(
                close(v, answer, rounding=rounding)
                or (facts.answer_percent and close(v, answer * 100, rounding=rounding))
                for v in values
            ):
                reason = f"the answer {facts.answer_text} is not {_fmt(earlier[-1])}, found last"
                found.append(Finding("final_answer", reason))
        self.previous_numbers = numbers
        self.results_before_previous = len(earlier)
        return found

    def _env(self) -> dict[str, float]:
        """Variables with one known value, stated in the problem or the last few steps: long
        solutions reuse letters for new things."""
        return {
            s: v[0]
            for s, (v, at) in self.known.items()
            if len(v) == 1 and (at < 0 or self.position - at <= MEMORY_STEPS)
        }

    def _where(self, symbol: str) -> str:
        at = self.known[symbol][1]
        return "the problem" if at < 0 else f"step {at + 1}"

    def _learn(
        self, facts: StepMath, *, quiet: bool, hypothesis: bool, rounding: bool = False
    ) -> list[Finding]:
        found: list[Finding] = []
        for symbol, op, value in facts.inequalities:
            self.conditions.setdefault(symbol, []).append((op, value))
        assigned: dict[str, int] = {}
        conditions: dict[str, int] = {}
        stated: dict[str, float] = {}  # x = 2.4 in this step: "2x - 3 = 1.8" before it is about it
        for st in facts.statements:
            first = st.exprs[0]
            if first is not None and isinstance(first.tree, ast.Name):
                symbol = first.tree.id
                assigned[symbol] = assigned.get(symbol, 0) + 1
                last = st.exprs[-1]
                if last is not None and not last.symbols:
                    with suppress(Unevaluable):
                        stated[symbol] = last.value()
            elif len(st.symbols) == 1:
                (symbol,) = st.symbols
                conditions[symbol] = conditions.get(symbol, 0) + 1
        # x = 1 and x = -2, or 3x - 1 = 1 or 3x - 1 = -1: a list of cases, not a contradiction
        several = {symbol for symbol, n in assigned.items() if n > 1}
        if facts.disjunction:
            several |= {symbol for symbol, n in conditions.items() if n > 1}
        if several and not quiet:
            found += _listed_values(facts, several)
        renewed = self._renewed(facts, stated)
        for st in facts.statements:
            numeric = [e for e in st.exprs if e is not None and not e.symbols]
            if numeric:
                with suppress(Unevaluable):
                    self.results.append(numeric[-1].value())
            env = self._env()
            if st.alternatives or several & st.symbols:
                continue
            first = st.exprs[0]
            if first is not None and isinstance(first.tree, ast.Name) and first.tree.id in renewed:
                self.known[first.tree.id] = ([renewed[first.tree.id]], self.position)
                continue
            if renewed.keys() & st.symbols:
                env = {**env, **renewed}
            for i, (a, b) in enumerate(zip(st.exprs, st.exprs[1:], strict=False)):
                if a is None or b is None or (a.units and b.units and a.units != b.units):
                    continue
                found += self._link(
                    st, i, a, b, env, quiet=quiet, calm=hypothesis, rounding=rounding
                )
        return found

    def _renewed(self, facts: StepMath, stated: dict[str, float]) -> dict[str, float]:
        """Variables this step gives a new value *and* an equation that value solves ("solving
        $2x - 3 = 1.8$ yields $x = 2.4$"): a fresh derivation, not a contradiction of before."""
        env = self._env()
        out = {}
        for symbol, value in stated.items():
            if symbol not in env or close(env[symbol], value):
                continue
            trial = {**env, symbol: value}
            for st in facts.statements:
                first = st.exprs[0]
                if symbol not in st.symbols or (
                    first is not None and isinstance(first.tree, ast.Name)
                ):
                    continue
                pairs = zip(st.exprs, st.exprs[1:], strict=False)
                with suppress(Unevaluable):
                    if any(
                        a is not None
                        and b is not None
                        and a.symbols | b.symbols <= trial.keys()
                        and close(a.value(trial), b.value(trial))
                        for a, b in pairs
                    ):
                        out[symbol] = value
                        break
        return out

    def _link(self, st, i, a, b, env, *, quiet, calm, rounding) -> list[Finding]:
        claim = f"{st.parts[i]} = {st.parts[i + 1]}"
        if not a.symbols and not b.symbols:
            left, right = a.value(), b.value()
            bare = _BARE_PERCENT.match(st.parts[i]) or _BARE_PERCENT.match(st.parts[i + 1])
            if close(left, right, st.parts[i + 1], rounding) or (
                bare and (close(left, right * 100) or close(left * 100, right))
            ):
                self.verified += 1
                return []
            if quiet:
                return []
            return [Finding("arithmetic", f"{claim}: the left side is {_fmt(left)}")]
        same = _identical(a, b, {})
        if same:
            self.verified += 1
            return []
        if same is None:
            return []
        free = (a.symbols | b.symbols) - env.keys()
        if not free:  # every variable has a value from earlier: the equation must hold with them
            if close(a.value(env), b.value(env), st.parts[i + 1], rounding):
                self.verified += 1
                return []
            names = sorted(a.symbols | b.symbols)
            this_step = any(self.known[n][1] == self.position for n in names)
            if quiet or (calm and not (this_step and not st.alternatives)):
                return []
            given = ", ".join(f"{s} = {_fmt(env[s])} ({self._where(s)})" for s in names)
            return [Finding("contradiction", f"{claim} fails with {given}")]
        if a.symbols and b.symbols and not (quiet or calm):
            constant = _difference_is_constant(a, b)
            if constant is not None and constant != 0:
                return [
                    Finding("algebra", f"{claim} has no solution (the sides differ by {constant})")
                ]
            rewrite = i >= 1 and len(st.parts) >= 3 and a.symbols == b.symbols
            if rewrite and not (a.symbols & env.keys()):
                return [Finding("algebra", f"{claim} is not an identity")]
        if len(free) != 1:
            return []
        (symbol,) = free
        roots = _solve(a, b, symbol, env)
        if roots is None and not env.keys() & (a.symbols | b.symbols):
            self.pending.setdefault(symbol, []).append((a, b, claim, self.position))
        if not roots:
            return []
        return self._assign(symbol, roots, st, claim, quiet=quiet or calm)

    def _assign(self, symbol, roots, st, claim, *, quiet) -> list[Finding]:
        found = []
        before = self.known.get(symbol)
        if before and before[1] >= 0 and self.position - before[1] > MEMORY_STEPS:
            before = None
        if before and before[1] == self.position and not st.alternatives:
            quiet = False  # the same step derived another value: hypotheses do not excuse that
        if before and not quiet and not any(close(r, v) for r in roots for v in before[0]):
            had = " or ".join(_fmt(v) for v in before[0])
            reason = (
                f"{claim} gives {symbol} = {_fmt(roots[0])}, but {symbol} = {had} in "
                f"{self._where(symbol)}"
            )
            found.append(Finding("contradiction", reason))
        if len(roots) == 1 and not quiet and not found:
            for a, b, text, at in self.pending.get(symbol, []):
                if at < self.position - 1:
                    continue
                with suppress(Unevaluable):
                    if not close(a.value({symbol: roots[0]}), b.value({symbol: roots[0]})):
                        where = "this step" if at == self.position else f"step {at + 1}"
                        reason = f"{symbol} = {_fmt(roots[0])} does not satisfy {text} ({where})"
                        found.append(Finding("contradiction", reason))
                        break
        if len(roots) == 1 and not quiet:
            for op, c in self.conditions.get(symbol, []):
                if not _OPS[op](roots[0], c):
                    value = _fmt(roots[0])
                    reason = f"{symbol} = {value} breaks the condition {symbol} {op} {_fmt(c)}"
                    found.append(Finding("condition", reason))
        if not st.alternatives:
            self.known[symbol] = (roots, self.position)
            if len(roots) == 1:
                self.results.append(roots[0])
        return found


_STEP_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?")
_ANSWER_PART = re.compile(r"\\boxed\s*\{.*|#\s*Answer.*", re.S)


def _without_answer(text: str) -> str:
    return _ANSWER_PART.sub(" ", text)


def check_solution(problem: str, steps: Sequence[str]) -> list[list[Finding]]:
    """Per step, the checks that fired on it (name and a short reason), in the order of CHECKS."""
    context = SolutionChecks(problem)
    return [context.step(step) for step in steps]

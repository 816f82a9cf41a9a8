"""A solution, step by step: what the problem and the steps so far established, and the checks
of each next step against it."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from contextlib import suppress

from prm.checks.base import (
    CHECKS,
    HYPOTHESIS_WORDS,
    MAX_STEP_CHARACTERS,
    MEMORY_STEPS,
    NEGATION_WORDS,
    ROUNDING_WORDS,
    SELECTION_WORDS,
    Finding,
    close,
    fmt,
)
from prm.checks.step import (
    Statement,
    StepMath,
    difference_is_constant,
    identical,
    listed_values,
    read_step,
    solve_for,
)
from prm.checks.words import (
    BARE_PERCENT,
    number_of,
    plain_arithmetic,
    plain_text,
    word_findings,
    worded_failures,
)
from prm.features import arithmetic_failures, arithmetic_results
from prm.latex import (
    Expr,
    Unevaluable,
    load_parser,
)

_OPS = {
    ">": lambda x, c: x > c,
    "<": lambda x, c: x < c,
    ">=": lambda x, c: x >= c,
    "<=": lambda x, c: x <= c,
}


class SolutionChecks:
    """What the problem and the steps so far established, and the checks of each next step."""

    def __init__(self, problem: str) -> None:
        load_parser()
        self.known: dict[str, tuple[list[float], int]] = {}  # symbol -> (values, step index)
        self.conditions: dict[str, list[tuple[str, float]]] = {}
        self.results: list[float] = []  # values computed or solved for, in order
        self.previous_text = ""  # its numbers count for a bare final answer (_final_answer)
        self.results_before_previous = 0
        # single-variable equations not solved here (degree > 2): a value found later must fit
        self.pending: dict[str, list[tuple[Expr, Expr, str, int]]] = {}
        self.position = -1  # the problem
        self.verified = 0
        with suppress(Unevaluable, RecursionError, ValueError, ArithmeticError):
            self._learn(read_step(problem[:MAX_STEP_CHARACTERS]), quiet=True, hypothesis=True)
        self.results = []
        self.position = 0

    def step(self, text: str) -> list[Finding]:
        """The findings of the next step (and remember what it establishes). Never raises: a
        step too long to read, or one whose mathematics cannot be evaluated, has no findings."""
        self.verified = 0
        try:
            found = [] if len(text) > MAX_STEP_CHARACTERS else self._check(text)
        except (Unevaluable, RecursionError, ValueError, ArithmeticError):
            found = []
        self.position += 1
        unique: dict[str, Finding] = {}
        for f in found:
            unique.setdefault(f.check, f)
        return [unique[name] for name in CHECKS if name in unique]

    def _check(self, text: str) -> list[Finding]:
        found = []
        failures: list[str] = []
        if "=" in text:  # every equation the plain-text arithmetic checks read has one
            outside = plain_arithmetic(text)
            failures = arithmetic_failures(outside) + worded_failures(outside)
            self.results += arithmetic_results(outside)
        facts = read_step(text)
        # Whether the step's claims are meant (a negation, a hypothesis) and how exact they are:
        # asked only of a step that makes some (most steps state no equation nor answer).
        negated = hypothesis = rounding = False
        if failures or facts.statements or facts.answer is not None:
            plain = plain_text(text)
            negated = bool(NEGATION_WORDS.search(plain)) or "?" in text
            hypothesis = negated or bool(HYPOTHESIS_WORDS.search(plain))
            rounding = bool(ROUNDING_WORDS.search(text))
        if not negated:
            found += [Finding("arithmetic", f"{run} does not hold") for run in failures]
        found += word_findings(text)
        earlier = list(self.results)
        found += self._learn(facts, quiet=negated, hypothesis=hypothesis, rounding=rounding)
        if facts.answer is not None and earlier and facts.bare_answer and not negated:
            found += self._final_answer(text, facts, earlier, rounding)
        self.previous_text = text
        self.results_before_previous = len(earlier)
        return found

    def _final_answer(
        self, text: str, facts: StepMath, earlier: list[float], rounding: bool
    ) -> list[Finding]:
        """A bare final answer that is none of the values computed or stated before it."""
        assert facts.answer is not None
        if SELECTION_WORDS.search(plain_text(text)):
            return []
        answer = facts.answer
        # numbers of the step before count when it computed nothing we could read
        values = self.results + _step_numbers(text)
        if len(earlier) == self.results_before_previous:
            values += _step_numbers(self.previous_text)
        if any(
            close(v, answer, rounding=rounding)
            or (facts.answer_percent and close(v, answer * 100, rounding=rounding))
            for v in values
        ):
            return []
        reason = f"the answer {facts.answer_text} is not {fmt(earlier[-1])}, found last"
        return [Finding("final_answer", reason)]

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
            found += listed_values(facts, several)
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

    def _link(
        self,
        st: Statement,
        i: int,
        a: Expr,
        b: Expr,
        env: dict[str, float],
        *,
        quiet: bool,
        calm: bool,
        rounding: bool,
    ) -> list[Finding]:
        claim = f"{st.parts[i]} = {st.parts[i + 1]}"
        if not a.symbols and not b.symbols:
            left, right = a.value(), b.value()
            bare = BARE_PERCENT.match(st.parts[i]) or BARE_PERCENT.match(st.parts[i + 1])
            if close(left, right, st.parts[i + 1], rounding) or (
                bare and (close(left, right * 100) or close(left * 100, right))
            ):
                self.verified += 1
                return []
            if quiet:
                return []
            return [Finding("arithmetic", f"{claim}: the left side is {fmt(left)}")]
        same = identical(a, b, {})
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
            given = ", ".join(f"{s} = {fmt(env[s])} ({self._where(s)})" for s in names)
            return [Finding("contradiction", f"{claim} fails with {given}")]
        if a.symbols and b.symbols and not (quiet or calm):
            constant = difference_is_constant(a, b)
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
        roots = solve_for(a, b, symbol, env)
        if roots is None and not env.keys() & (a.symbols | b.symbols):
            self.pending.setdefault(symbol, []).append((a, b, claim, self.position))
        if not roots:
            return []
        return self._assign(symbol, roots, st, claim, quiet=quiet or calm)

    def _assign(
        self, symbol: str, roots: list[float], st: Statement, claim: str, *, quiet: bool
    ) -> list[Finding]:
        found = []
        before = self.known.get(symbol)
        if before and before[1] >= 0 and self.position - before[1] > MEMORY_STEPS:
            before = None
        if before and before[1] == self.position and not st.alternatives:
            quiet = False  # the same step derived another value: hypotheses do not excuse that
        if before and not quiet and not any(close(r, v) for r in roots for v in before[0]):
            had = " or ".join(fmt(v) for v in before[0])
            reason = (
                f"{claim} gives {symbol} = {fmt(roots[0])}, but {symbol} = {had} in "
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
                        reason = f"{symbol} = {fmt(roots[0])} does not satisfy {text} ({where})"
                        found.append(Finding("contradiction", reason))
                        break
        if len(roots) == 1 and not quiet:
            for op, c in self.conditions.get(symbol, []):
                if not _OPS[op](roots[0], c):
                    value = fmt(roots[0])
                    reason = f"{symbol} = {value} breaks the condition {symbol} {op} {fmt(c)}"
                    found.append(Finding("condition", reason))
        if not st.alternatives:
            self.known[symbol] = (roots, self.position)
            if len(roots) == 1:
                self.results.append(roots[0])
        return found


_STEP_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?")
_ANSWER_PART = re.compile(r"\\boxed\s*\{.*|#\s*Answer.*", re.S)


def _step_numbers(text: str) -> list[float]:
    """The numbers a step writes, outside its final answer."""
    return [number_of(n) for n in _STEP_NUMBER.findall(_ANSWER_PART.sub(" ", text))]


def check_solution(problem: str, steps: Sequence[str]) -> list[list[Finding]]:
    """Per step, the checks that fired on it (name and a short reason), in the order of CHECKS."""
    context = SolutionChecks(problem)
    return [context.step(step) for step in steps]

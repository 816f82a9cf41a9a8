"""What answer grading lets math-verify work on: bounds on size, never on time.

math-verify (sympy underneath) bounds its work only by ``signal.alarm``, so whether a hard pair
is decided depends on how busy the machine is: under load, 2 of 1,943 MATH-500 pairs came back
undecided that an idle machine decides. Here both sides of a pair are measured before math-verify
works on them, twice, and a side outside the bounds makes the pair undecided, at every load:

- as text, before parsing (:func:`text_refusal`): its length, bracket nesting, digits per
  written number, and the constructs latex2sympy *evaluates while parsing* (binomial
  coefficients and Gamma only with small plain arguments: ``\\binom{1000000}{500000}`` took 88 s
  inside the parser; ``\\operatorname{..}`` and ``\\det``, which run matrix algebra, not at all);
- as the parsed expression, before comparing (:func:`expression_refusal`): its nodes and depth,
  the size of every number it stands for (``2^{10^{100}}``, ``10^{10}!``, ``e^{10^{10}}``,
  ``\\sin(10^{5000})``), the terms its polynomials expand to (``(x+1)^{2000}`` took 13 s to
  compare, ``(x+y+z)^{20}`` 6 s), their degree in functions (``(\\sin x + \\cos x)^{24}``: 18 s),
  the degree of equations (math-verify solves them: degree 20 took 21 s), the span of finite
  sums; integrals and limits are not compared at all.

The limits are 2 to 20 times the largest value among 5,279 distinct real answers and truths
(MATH train and MATH-500, GSM8K, PRM800K phase 1, Qwen2.5-Math samples; the figures are beside
each limit; none of them is refused), and the costliest expressions they admit compare in one
or two CPU seconds.
``docs/import-formats.md`` ("How answers are graded") has the measurements.

This module imports sympy only inside :func:`expression_refusal`: the web process that builds
a ``Grader`` needs :class:`Limits`, not sympy.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

_LOG10_2 = math.log10(2)


@dataclass(frozen=True)
class Limits:
    """The bounds (largest real value in brackets)."""

    chars: int = 1000  # characters of an answer (285)
    nesting: int = 20  # brackets inside brackets (5)
    digits: int = 100  # digits of one written number (18)
    nodes: int = 500  # nodes of the parsed expression (92)
    depth: int = 50  # depth of the parsed expression (14)
    number_digits: int = 20_000  # digits of any number it stands for (2004!: 5,700)
    exponent: int = 1000  # integer power of anything but a number (z^{96})
    terms: int = 120  # terms of any part, expanded (21)
    function_degree: int = 8  # degree in sin x, e^x, sqrt(x), ... (4)
    equation_degree: int = 6  # degree of an equation or inequality (2)
    factorial: int = 5000  # n of n!, Gamma(n), binomial(n, k) (2004)
    sum_terms: int = 1000  # terms of a sum or product with numeric bounds (an infinite one)
    function_digits: int = 1000  # digits of a numeric argument of sin, log, ... (2)
    eager_digits: int = 3  # digits of any number in an answer with \binom or \Gamma (none)


# -- text ----------------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+")
# latex2sympy evaluates these while it parses, before anything can look at the result.
_EAGER = re.compile(r"\\(?:[dt]?binom|choose|Gamma|gamma)(?![A-Za-z])")
_MATRIX_ALGEBRA = re.compile(r"\\(?:operatorname|det)(?![A-Za-z])")


def text_refusal(text: str, limits: Limits) -> str | None:
    """Why this answer text is too big to parse, or ``None`` when it may be parsed."""
    if len(text) > limits.chars:
        return f"longer than {limits.chars} characters"
    depth = deepest = 0
    for ch in text:
        if ch in "({[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")}]":
            depth = max(0, depth - 1)
    if deepest > limits.nesting:
        return f"brackets nested deeper than {limits.nesting}"
    longest = max((len(m) for m in _NUMBER.findall(text)), default=0)
    if longest > limits.digits:
        return f"a number of more than {limits.digits} digits"
    if _MATRIX_ALGEBRA.search(text):
        return "matrix algebra (\\operatorname, \\det) is evaluated while parsing"
    if _EAGER.search(text) and (longest > limits.eager_digits or re.search(r"[\^!]", text)):
        return "a binomial or Gamma of a large argument is evaluated while parsing"
    return None


# -- parsed expression ---------------------------------------------------------------------------


class OutOfBounds(Exception):
    pass


def expression_refusal(expr: Any, limits: Limits) -> str | None:
    """Why this parsed answer is too big to compare, or ``None`` when it may be compared.

    ``expr`` is one item of ``math_verify.parse``'s result (a sympy object or a string)."""
    if isinstance(expr, str):
        return None
    try:
        _Walk(limits).size(expr, 0)
    except OutOfBounds as refusal:
        return str(refusal)
    return None


class _Walk:
    """One pass over the tree: every node counted, every number's size bounded (an upper bound
    of log10 of its magnitude, or of its reciprocal's), every polynomial's expanded size and
    degree bounded."""

    def __init__(self, limits: Limits) -> None:
        import sympy

        self.sympy = sympy
        self.limits = limits
        self.nodes = 0
        self.combinatorial = (
            sympy.factorial,
            sympy.factorial2,
            sympy.subfactorial,
            sympy.gamma,
            sympy.binomial,
            sympy.RisingFactorial,
            sympy.FallingFactorial,
        )

    def size(self, e: Any, depth: int) -> float | None:
        """An upper bound of log10 |e| when ``e`` is a number (``None`` when it is not),
        after checking ``e`` and everything under it."""
        sp, limits = self.sympy, self.limits
        self.nodes += 1
        if self.nodes > limits.nodes:
            raise OutOfBounds(f"more than {limits.nodes} nodes")
        if depth > limits.depth:
            raise OutOfBounds(f"deeper than {limits.depth}")
        if isinstance(e, sp.MatrixBase):
            for entry in e:
                self.size(entry, depth + 1)
            return None
        if not isinstance(e, sp.Basic):
            return None
        if isinstance(e, sp.Number):
            return self._number(e)
        if isinstance(e, sp.NumberSymbol) or e is sp.I:
            return 1.0
        if isinstance(e, sp.Integral | sp.Limit):
            raise OutOfBounds(f"an unevaluated {type(e).__name__}")
        if isinstance(e, sp.Pow):
            return self._power(e, depth)
        sizes = [self.size(a, depth + 1) for a in e.args]
        numeric = bool(sizes) and None not in sizes
        if isinstance(e, sp.Sum | sp.Product):
            for bounds in e.limits:
                self._span(bounds)
            return None
        if isinstance(e, sp.Rel):
            for side in e.args:
                if isinstance(side, sp.Expr) and self._poly(side)[1] > limits.equation_degree:
                    raise OutOfBounds(f"an equation of degree above {limits.equation_degree}")
            return None
        if isinstance(e, sp.Add | sp.Mul):
            self._terms(e)
            if not numeric:
                return None
            if isinstance(e, sp.Add):
                return max(sizes) + math.log10(len(sizes))
            return self._cap(sum(abs(s) for s in sizes))
        if isinstance(e, sp.Function) and numeric:
            return self._function(e, sizes)
        return None

    def _cap(self, size: float) -> float:
        if size > self.limits.number_digits:
            raise OutOfBounds(f"a number of more than {self.limits.number_digits} digits")
        return size

    def _number(self, e: Any) -> float:
        sp = self.sympy
        if isinstance(e, sp.Integer):
            return self._cap(abs(int(e)).bit_length() * _LOG10_2)
        if isinstance(e, sp.Rational):
            return self._cap(max(abs(e.p).bit_length(), e.q.bit_length()) * _LOG10_2)
        if isinstance(e, sp.Float):
            _, mantissa, exponent, bits = e._mpf_
            return self._cap(abs(exponent + bits) * _LOG10_2) if mantissa else 0.0
        return 0.0  # infinities, nan

    def _magnitude(self, e: Any, size: float) -> float:
        """An upper bound of |e| for a number whose log10 is at most ``size``."""
        if isinstance(e, self.sympy.Number) and e.is_finite:
            return abs(float(e))
        return math.inf if size > 300 else 10.0**size

    def _power(self, e: Any, depth: int) -> float | None:
        limits = self.limits
        base, exponent = e.args
        base_size = self.size(base, depth + 1)
        exponent_size = self.size(exponent, depth + 1)
        if exponent_size is None:
            return None  # 2^x, x^y
        power = self._magnitude(exponent, exponent_size)
        if base_size is None:  # a power of a variable or a matrix: math-verify expands it
            if power > limits.exponent:
                raise OutOfBounds(f"a power above {limits.exponent} of a non-number")
            self._terms(e)
            return None
        # at least log10(2), so that 1^(10^100) is not waved through as size 0
        return self._cap(max(base_size, _LOG10_2) * power)

    def _function(self, e: Any, sizes: list[float]) -> float:
        sp, limits = self.sympy, self.limits
        if isinstance(e, self.combinatorial):
            n = self._magnitude(e.args[0], sizes[0])
            if n > limits.factorial:
                raise OutOfBounds(f"{type(e).__name__} of more than {limits.factorial}")
            return self._cap(n * math.log10(max(n, 2.0)))
        if isinstance(e, sp.exp):
            x = self._magnitude(e.args[0], sizes[0])
            return self._cap(x / math.log(10))
        if max(sizes) > limits.function_digits:
            raise OutOfBounds(
                f"{type(e).__name__} of a number of over {limits.function_digits} digits"
            )
        return max(sizes)

    def _span(self, bounds: Any) -> None:
        if len(bounds) != 3:
            return
        _, low, high = bounds
        if not (low.is_number and high.is_number and low.is_finite and high.is_finite):
            return  # symbolic or infinite: summed in closed form or not at all
        span = self._magnitude(high, self.size(high, 0) or 0.0)
        span += self._magnitude(low, self.size(low, 0) or 0.0)
        if span > self.limits.sum_terms:
            raise OutOfBounds(f"a sum or product of more than {self.limits.sum_terms} terms")

    def _terms(self, e: Any) -> None:
        limits = self.limits
        terms, degree, generators = self._poly(e)
        # a polynomial of degree d in v generators has at most C(d + v, v) terms
        v = len(generators)
        dense = _log_comb(degree + v, v) if v else 0.0
        if min(terms, dense) > math.log10(limits.terms):
            raise OutOfBounds(f"more than {limits.terms} terms when expanded")
        # simplify's rules for functions (trigonometry above all) grow much faster with the
        # degree than its polynomial algebra does
        functions = [g for g in generators if not isinstance(g, self.sympy.Symbol)]
        if functions and self._poly(e, only=frozenset(functions))[1] > limits.function_degree:
            raise OutOfBounds(f"a degree above {limits.function_degree} in functions")

    def _poly(self, e: Any, only: frozenset | None = None) -> tuple[float, int, frozenset]:
        """(log10 of its terms, its degree, its generators) of ``e`` expanded, as upper bounds;
        the degree counts only the generators in ``only``, when given."""
        sp = self.sympy
        if isinstance(e, sp.Number | sp.NumberSymbol) or not isinstance(e, sp.Expr):
            return 0.0, 0, frozenset()
        if isinstance(e, sp.Add | sp.Mul):
            parts = [self._poly(a, only) for a in e.args]
            generators = frozenset().union(*(g for _, _, g in parts))
            if isinstance(e, sp.Add):
                terms = math.log10(sum(10.0 ** min(t, 300) for t, _, _ in parts))
                return terms, max(d for _, d, _ in parts), generators
            # a fraction expands its numerator and its denominator, not their product
            over = [_is_reciprocal(sp, a) for a in e.args]
            top = [p for p, down in zip(parts, over, strict=True) if not down]
            bottom = [p for p, down in zip(parts, over, strict=True) if down]
            terms = math.log10(
                10.0 ** min(sum(t for t, _, _ in top), 300)
                + (10.0 ** min(sum(t for t, _, _ in bottom), 300) if bottom else 0.0)
            )
            degree = max(sum(d for _, d, _ in top), sum(d for _, d, _ in bottom))
            return terms, degree, generators
        if isinstance(e, sp.Pow) and isinstance(e.exp, sp.Integer):
            k = min(abs(int(e.exp)), self.limits.exponent + 1)
            terms, degree, generators = self._poly(e.base, only)
            # (t terms)^k has at most C(t + k - 1, k) terms
            if terms > 0:
                terms = _log_comb(10.0 ** min(terms, 300) + k - 1, k)
            return terms, degree * k, generators
        if not e.free_symbols:
            return 0.0, 0, frozenset()
        # a variable, or anything else with one in it
        return 0.0, int(only is None or e in only), frozenset([e])


def _log_comb(n: float, k: float) -> float:
    """log10 of the binomial coefficient C(n, k) for real n >= k >= 0."""
    if k <= 0 or n <= k:
        return 0.0
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(10)


def _is_reciprocal(sp: Any, e: Any) -> bool:
    return isinstance(e, sp.Pow) and e.exp.is_number and e.exp.is_negative is True

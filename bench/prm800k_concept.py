"""What a topic of the world's problems is (``Concept``) and the helpers its declarations use
(``bench/prm800k_topics.py`` declares the 29 school topics, ``bench/prm800k_defined.py`` the
defined operations of the long tail)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

Ops = dict[str, int]
Value = Callable[[Ops], Fraction]


@dataclass(frozen=True)
class Concept:
    """One topic: how a problem asks for it, how to draw its numbers, the right value and its
    step texts, and each misconception's value and step texts. Values are ``Fraction``: a
    value that is not a whole number is no solution the world uses (numbers are drawn again)."""

    name: str
    ask: str
    draw: Callable[[random.Random], Ops]
    right: Value
    right_steps: tuple[str, ...]  # the first is an equation, so a slip in it is checkable
    wrongs: tuple[tuple[Value, tuple[str, ...]], ...]
    extra: Callable[[Ops], dict[str, object]] = field(default=lambda ops: {})

    def fields(self, ops: Ops, result: int) -> dict[str, object]:
        return {**ops, **self.extra(ops), "r": result}


def whole_value(value: Fraction) -> int | None:
    return int(value) if value.denominator == 1 and value > 0 else None


def frac(x: int) -> Fraction:
    return Fraction(x)


def pick(rng: random.Random, options: Sequence[tuple[int, ...]], names: str) -> Ops:
    return dict(zip(names.split(), rng.choice(options), strict=True))


def ints(**ranges: tuple[int, int]) -> Callable[[random.Random], Ops]:
    return lambda rng: {k: rng.randint(lo, hi) for k, (lo, hi) in ranges.items()}


def decimal_of(percent: int) -> str:
    return f"{Fraction(percent, 100).numerator / Fraction(percent, 100).denominator:g}"


TRIPLES = [(3, 4), (5, 12), (8, 15), (7, 24), (20, 21), (6, 8), (9, 12), (12, 16), (15, 20)]
WORK_PAIRS = [(4, 12), (6, 12), (12, 24), (20, 30), (6, 30), (10, 40), (12, 36), (8, 24)]
SPEED_PAIRS = [(30, 60), (20, 60), (40, 60), (12, 24), (10, 40), (6, 12), (24, 40), (28, 70)]

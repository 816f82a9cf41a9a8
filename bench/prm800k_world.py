"""A world of step-by-step solutions with known step correctness, shaped like PRM800K's ablation.

``bench/prm800k_ablation.py`` reproduces the paper's active-learning ablation ("Let's Verify Step
by Step", section 4.2) where no strong PRM can run: it needs, per problem, a large pool of sampled
solutions whose steps a strong labeller can rate, and among them *convincing wrong answers*
(a wrong final answer reached through plausible steps) as well as right ones. This module makes
such pools from a known truth, so the labeller is the truth itself (plus stated noise).

A problem asks for the total of 2 to 4 quantities, each an instance of one of ``CONCEPTS`` (the
area of a rectangle, handshakes among n people, the nth term of a sequence, ...: 29 school
topics with their own numbers). A solution opens, computes each quantity in one step, adds them
up and states ``# Answer``, as PRM800K's solutions do. Each step that computes something goes
wrong with a per-problem chance (problems differ in difficulty), in one of three ways:

- **wrong method** (``ERROR_KINDS[0]``): a well-known misconception applied correctly (the
  perimeter for the area, ``n(n-1)`` handshakes, ``a + nd`` for the nth term, subtracting a part
  in the total): well-formed, its arithmetic right, so no exact check fires; a PRM learns it from
  labelled examples of that misconception (each concept has its own);
- **copied wrong number**: the right method with another of the problem's numbers: its
  arithmetic is right and the number is in the problem, so neither the checks nor the ``bow``
  features (which read the step, not the problem) can tell; only a model that reads the problem
  can;
- **arithmetic slip**: the right method and numbers, a wrong result, which the exact checks of
  ``prm.checks`` catch (``arithmetic``).

Later steps carry the wrong value, with consistent arithmetic, to a wrong final answer. A step's
truth is whether the solution is still sound there (sound up to its first error, unsound from it
on); the final answer's correctness is the computed total against the true one.

The parameters are chosen from the paper and from what was measured on PRM800K, never from this
benchmark's result: a problem's solve rate is uniform in ``SOLVE_RATE`` (MATH problems range from
almost always to almost never solved by the generator); among errors, slips are 10% because the
exact checks fire on about 8% of the steps people rated wrong in PRM800K phase 1
(docs/prm-checks.md: ``arithmetic`` 110 firings at 71% wrong, and the others, against 1,586
negative steps). ``MIX`` gives the other 90% to wrong methods: every error is one a PRM can learn
from its labelled examples, as the paper's small PRMs could learn what PRM_large labelled.
``COPIED_MIX`` moves a third of them to copied numbers, which the ``bow`` student cannot see (it
does not read the problem): the assumption broken on purpose. ``world(tail=True)`` adds 400
defined operations (``LIBRARY``: "the twisted knot of $x$ and $y$ is $x \\cdot y + x$", each with
its own misconception, another form) to the 29 topics, drawn with Zipf frequencies: a long tail of
topics, each seen in a few problems.

Deterministic for a seed; ``world(...)`` builds whole pools.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from prm.data import Solution, split_of

WRONG_METHOD, COPIED_NUMBER, SLIP = "wrong method", "copied wrong number", "arithmetic slip"
ERROR_KINDS = (WRONG_METHOD, COPIED_NUMBER, SLIP)
MIX = (0.9, 0.0, 0.1)  # shares of ERROR_KINDS among errors (why: the module's docstring)
COPIED_MIX = (0.6, 0.3, 0.1)  # the variant where a third of the other errors are copied numbers
SOLVE_RATE = (0.05, 0.95)  # a problem's chance that a sample has no error, uniform in this range

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


def _whole(value: Fraction) -> int | None:
    return int(value) if value.denominator == 1 and value > 0 else None


def _f(x: int) -> Fraction:
    return Fraction(x)


def _pick(rng: random.Random, options: Sequence[tuple[int, ...]], names: str) -> Ops:
    return dict(zip(names.split(), rng.choice(options), strict=True))


def _ints(**ranges: tuple[int, int]) -> Callable[[random.Random], Ops]:
    return lambda rng: {k: rng.randint(lo, hi) for k, (lo, hi) in ranges.items()}


def _decimal(percent: int) -> str:
    return f"{Fraction(percent, 100).numerator / Fraction(percent, 100).denominator:g}"


TRIPLES = [(3, 4), (5, 12), (8, 15), (7, 24), (20, 21), (6, 8), (9, 12), (12, 16), (15, 20)]
WORK_PAIRS = [(4, 12), (6, 12), (12, 24), (20, 30), (6, 30), (10, 40), (12, 36), (8, 24)]
SPEED_PAIRS = [(30, 60), (20, 60), (40, 60), (12, 24), (10, 40), (6, 12), (24, 40), (28, 70)]

CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "rectangle area",
        "the area of a rectangle with sides {a} and {b}",
        _ints(a=(3, 19), b=(3, 19)),
        lambda o: _f(o["a"] * o["b"]),
        (
            "The area of the rectangle is ${a} \\times {b} = {r}$.",
            "The rectangle's area is length times width, ${a} \\cdot {b} = {r}$.",
        ),
        (
            (
                lambda o: _f(2 * (o["a"] + o["b"])),
                (
                    "The area of the rectangle is $2({a} + {b}) = {r}$.",
                    "The rectangle's area is $2 \\cdot ({a} + {b}) = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "triangle area",
        "the area of a triangle with base {b} and height {h}",
        _ints(b=(3, 20), h=(3, 20)),
        lambda o: Fraction(o["b"] * o["h"], 2),
        (
            "The area of the triangle is $\\frac{{1}}{{2}} \\cdot {b} \\cdot {h} = {r}$.",
            "Half of base times height gives $\\frac{{{b} \\cdot {h}}}{{2}} = {r}$ for the "
            "triangle.",
        ),
        (
            (
                lambda o: _f(o["b"] * o["h"]),
                (
                    "The area of the triangle is ${b} \\cdot {h} = {r}$.",
                    "Base times height gives ${b} \\times {h} = {r}$ for the triangle.",
                ),
            ),
        ),
    ),
    Concept(
        "handshakes",
        "the number of handshakes when {n} people each shake hands once with everyone else",
        _ints(n=(4, 25)),
        lambda o: Fraction(o["n"] * (o["n"] - 1), 2),
        (
            "Each of the {n} people shakes {n1} hands and each handshake is counted twice, so "
            "there are $\\frac{{{n} \\cdot {n1}}}{{2}} = {r}$ handshakes.",
            "The handshakes number $\\frac{{{n}({n} - 1)}}{{2}} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["n"] * (o["n"] - 1)),
                (
                    "Each of the {n} people shakes {n1} hands, so there are "
                    "${n} \\cdot {n1} = {r}$ handshakes.",
                    "The handshakes number ${n}({n} - 1) = {r}$.",
                ),
            ),
        ),
        lambda o: {"n1": o["n"] - 1},
    ),
    Concept(
        "sum to n",
        "the sum of the integers from 1 to {n}",
        _ints(n=(5, 40)),
        lambda o: Fraction(o["n"] * (o["n"] + 1), 2),
        (
            "The sum of the integers up to {n} is $\\frac{{{n} \\cdot {np1}}}{{2}} = {r}$.",
            "Using the formula for the sum of the first {n} integers, "
            "$\\frac{{{n}({n} + 1)}}{{2}} = {r}$.",
        ),
        (
            (
                lambda o: Fraction(o["n"] * (o["n"] - 1), 2),
                (
                    "The sum of the integers up to {n} is $\\frac{{{n} \\cdot {n1}}}{{2}} = {r}$.",
                    "Using the formula for the sum of the first {n} integers, "
                    "$\\frac{{{n}({n} - 1)}}{{2}} = {r}$.",
                ),
            ),
        ),
        lambda o: {"n1": o["n"] - 1, "np1": o["n"] + 1},
    ),
    Concept(
        "integers between",
        "the number of integers from {a} to {b} inclusive",
        lambda rng: (lambda a: {"a": a, "b": a + rng.randint(5, 80)})(rng.randint(2, 50)),
        lambda o: _f(o["b"] - o["a"] + 1),
        (
            "The integers from {a} to {b} number ${b} - {a} + 1 = {r}$.",
            "Counting from {a} through {b} gives ${b} - {a} + 1 = {r}$ integers.",
        ),
        (
            (
                lambda o: _f(o["b"] - o["a"]),
                (
                    "The integers from {a} to {b} number ${b} - {a} = {r}$.",
                    "Counting from {a} through {b} gives ${b} - {a} = {r}$ integers.",
                ),
            ),
        ),
    ),
    Concept(
        "interior angles",
        "the sum of the interior angles, in degrees, of a polygon with {n} sides",
        _ints(n=(5, 12)),
        lambda o: _f((o["n"] - 2) * 180),
        (
            "The sum of the interior angles is $({n} - 2) \\cdot 180 = {r}$ degrees.",
            "A polygon with {n} sides splits into {n2} triangles, so its angles add up to "
            "${n2} \\cdot 180 = {r}$ degrees.",
        ),
        (
            (
                lambda o: _f(o["n"] * 180),
                (
                    "The sum of the interior angles is ${n} \\cdot 180 = {r}$ degrees.",
                    "A polygon with {n} sides splits into {n} triangles, so its angles add up to "
                    "${n} \\cdot 180 = {r}$ degrees.",
                ),
            ),
        ),
        lambda o: {"n2": o["n"] - 2},
    ),
    Concept(
        "diagonals",
        "the number of diagonals of a convex polygon with {n} sides",
        _ints(n=(5, 20)),
        lambda o: Fraction(o["n"] * (o["n"] - 3), 2),
        (
            "A polygon with {n} sides has $\\frac{{{n}({n} - 3)}}{{2}} = {r}$ diagonals.",
            "Each vertex joins {n3} others by a diagonal and each diagonal has two ends, so "
            "there are $\\frac{{{n} \\cdot {n3}}}{{2}} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["n"] * (o["n"] - 3)),
                (
                    "A polygon with {n} sides has ${n}({n} - 3) = {r}$ diagonals.",
                    "Each vertex joins {n3} others by a diagonal, so there are "
                    "${n} \\cdot {n3} = {r}$.",
                ),
            ),
        ),
        lambda o: {"n3": o["n"] - 3},
    ),
    Concept(
        "percent increase",
        "the result of increasing {w} by {p}\\%",
        lambda rng: {"w": 20 * rng.randint(2, 20), "p": rng.choice([5, 10, 15, 20, 25, 30, 50])},
        lambda o: o["w"] + Fraction(o["p"] * o["w"], 100),
        (
            "Increasing {w} by {p}\\% gives ${w} + \\frac{{{p}}}{{100}} \\cdot {w} = {r}$.",
            "The increase is {p}\\% of {w}, so the new value is ${w} \\cdot {up} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["w"] + o["p"]),
                (
                    "Increasing {w} by {p}\\% gives ${w} + {p} = {r}$.",
                    "The increase is {p}, so the new value is ${w} + {p} = {r}$.",
                ),
            ),
        ),
        lambda o: {"up": _decimal(100 + o["p"])},
    ),
    Concept(
        "minutes",
        "the number of minutes in {h} hours and {m} minutes",
        _ints(h=(2, 9), m=(5, 55)),
        lambda o: _f(60 * o["h"] + o["m"]),
        (
            "{h} hours and {m} minutes is ${h} \\cdot 60 + {m} = {r}$ minutes.",
            "In minutes that is $60 \\cdot {h} + {m} = {r}$.",
        ),
        (
            (
                lambda o: _f(100 * o["h"] + o["m"]),
                (
                    "{h} hours and {m} minutes is ${h} \\cdot 100 + {m} = {r}$ minutes.",
                    "In minutes that is $100 \\cdot {h} + {m} = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "divisors",
        "the number of positive divisors of ${p}^{{{a}}} \\cdot {q}^{{{b}}}$",
        lambda rng: {
            **_pick(rng, [(2, 3), (2, 5), (3, 5), (2, 7)], "p q"),
            "a": rng.randint(1, 6),
            "b": rng.randint(1, 6),
        },
        lambda o: _f((o["a"] + 1) * (o["b"] + 1)),
        (
            "${p}^{{{a}}} \\cdot {q}^{{{b}}}$ has $({a} + 1)({b} + 1) = {r}$ divisors.",
            "Each exponent can be taken from 0 up, so the count is "
            "$({a} + 1) \\cdot ({b} + 1) = {r}$.",
        ),
        (
            (
                lambda o: _f(o["a"] * o["b"]),
                (
                    "${p}^{{{a}}} \\cdot {q}^{{{b}}}$ has ${a} \\cdot {b} = {r}$ divisors.",
                    "Multiplying the exponents, the count is ${a} \\cdot {b} = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "arithmetic sequence",
        "the {n}th term of the arithmetic sequence that starts at {a} and goes up by {d}",
        _ints(a=(1, 20), d=(2, 9), n=(5, 30)),
        lambda o: _f(o["a"] + (o["n"] - 1) * o["d"]),
        (
            "The {n}th term is ${a} + ({n} - 1) \\cdot {d} = {r}$.",
            "Adding the difference {n1} times, ${a} + {n1} \\cdot {d} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["a"] + o["n"] * o["d"]),
                (
                    "The {n}th term is ${a} + {n} \\cdot {d} = {r}$.",
                    "Adding the difference {n} times, ${a} + {n} \\cdot {d} = {r}$.",
                ),
            ),
        ),
        lambda o: {"n1": o["n"] - 1},
    ),
    Concept(
        "geometric sequence",
        "the {n}th term of the geometric sequence that starts at {a} with ratio {q}",
        _ints(a=(1, 5), q=(2, 3), n=(3, 7)),
        lambda o: _f(o["a"] * o["q"] ** (o["n"] - 1)),
        (
            "The {n}th term is ${a} \\cdot {q}^{{{n1}}} = {r}$.",
            "Multiplying by {q} another {n1} times gives ${a} \\cdot {q}^{{{n1}}} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["a"] * o["q"] ** o["n"]),
                (
                    "The {n}th term is ${a} \\cdot {q}^{{{n}}} = {r}$.",
                    "Multiplying by {q} another {n} times gives ${a} \\cdot {q}^{{{n}}} = {r}$.",
                ),
            ),
        ),
        lambda o: {"n1": o["n"] - 1},
    ),
    Concept(
        "cube surface",
        "the surface area of a cube with edge {s}",
        _ints(s=(2, 15)),
        lambda o: _f(6 * o["s"] ** 2),
        (
            "The surface area of the cube is $6 \\cdot {s}^2 = {r}$.",
            "A cube has 6 faces of area ${s}^2$, so $6 \\cdot {s}^2 = {r}$.",
        ),
        (
            (
                lambda o: _f(o["s"] ** 3),
                (
                    "The surface area of the cube is ${s}^3 = {r}$.",
                    "A cube's surface is its edge cubed, ${s}^3 = {r}$.",
                ),
            ),
            (
                lambda o: _f(4 * o["s"] ** 2),
                (
                    "The surface area of the cube is $4 \\cdot {s}^2 = {r}$.",
                    "A cube has 4 faces of area ${s}^2$, so $4 \\cdot {s}^2 = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "box volume",
        "the volume of a box measuring {l} by {w} by {h}",
        _ints(l=(2, 12), w=(2, 12), h=(2, 12)),
        lambda o: _f(o["l"] * o["w"] * o["h"]),
        (
            "The volume of the box is ${l} \\cdot {w} \\cdot {h} = {r}$.",
            "Length times width times height: ${l} \\times {w} \\times {h} = {r}$.",
        ),
        (
            (
                lambda o: _f(2 * (o["l"] * o["w"] + o["w"] * o["h"] + o["l"] * o["h"])),
                (
                    "The volume of the box is "
                    "$2({l} \\cdot {w} + {w} \\cdot {h} + {l} \\cdot {h}) = {r}$.",
                    "Adding up the faces: "
                    "$2 \\cdot ({l} \\cdot {w} + {w} \\cdot {h} + {l} \\cdot {h}) = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "hypotenuse",
        "the hypotenuse of a right triangle with legs {a} and {b}",
        lambda rng: (lambda k, t: {"a": k * t[0], "b": k * t[1]})(
            rng.randint(1, 3), rng.choice(TRIPLES)
        ),
        lambda o: (
            _f(math.isqrt(s)) if math.isqrt(s := o["a"] ** 2 + o["b"] ** 2) ** 2 == s else _f(0)
        ),
        (
            "The hypotenuse is $\\sqrt{{{a}^2 + {b}^2}} = {r}$.",
            "By Pythagoras the hypotenuse is $\\sqrt{{{a2} + {b2}}} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["a"] + o["b"]),
                (
                    "The hypotenuse is ${a} + {b} = {r}$.",
                    "The hypotenuse is the sum of the legs, ${a} + {b} = {r}$.",
                ),
            ),
        ),
        lambda o: {"a2": o["a"] ** 2, "b2": o["b"] ** 2},
    ),
    Concept(
        "average",
        "the average of {x}, {y} and {z}",
        lambda rng: (lambda x, y: {"x": x, "y": y, "z": 6 * rng.randint(5, 20) - x - y})(
            rng.randint(5, 40), rng.randint(5, 40)
        ),
        lambda o: Fraction(o["x"] + o["y"] + o["z"], 3),
        (
            "The average is $\\frac{{{x} + {y} + {z}}}{{3}} = {r}$.",
            "The three numbers add up to {t}, and $\\frac{{{t}}}{{3}} = {r}$.",
        ),
        (
            (
                lambda o: Fraction(o["x"] + o["y"] + o["z"], 2),
                (
                    "The average is $\\frac{{{x} + {y} + {z}}}{{2}} = {r}$.",
                    "The three numbers add up to {t}, and $\\frac{{{t}}}{{2}} = {r}$.",
                ),
            ),
        ),
        lambda o: {"t": o["x"] + o["y"] + o["z"]},
    ),
    Concept(
        "work together",
        "the number of hours two pipes take together to fill a tank that they fill alone in "
        "{a} and {b} hours",
        lambda rng: _pick(rng, WORK_PAIRS, "a b"),
        lambda o: Fraction(o["a"] * o["b"], o["a"] + o["b"]),
        (
            "Together the pipes take $\\frac{{{a} \\cdot {b}}}{{{a} + {b}}} = {r}$ hours.",
            "Their rates add up, so the time is $\\frac{{{a} \\cdot {b}}}{{{a} + {b}}} = {r}$ "
            "hours.",
        ),
        (
            (
                lambda o: Fraction(o["a"] + o["b"], 2),
                (
                    "Together the pipes take $\\frac{{{a} + {b}}}{{2}} = {r}$ hours.",
                    "Their times average out, so the time is $\\frac{{{a} + {b}}}{{2}} = {r}$ "
                    "hours.",
                ),
            ),
        ),
    ),
    Concept(
        "simple interest",
        "the simple interest, in dollars, on {P} dollars at {k}\\% a year for {t} years",
        lambda rng: {"P": 100 * rng.randint(2, 50), "k": rng.randint(2, 9), "t": rng.randint(2, 8)},
        lambda o: Fraction(o["P"] * o["k"] * o["t"], 100),
        (
            "The interest is $\\frac{{{P} \\cdot {k} \\cdot {t}}}{{100}} = {r}$ dollars.",
            "Each year earns $\\frac{{{k}}}{{100}} \\cdot {P}$, so over {t} years "
            "$\\frac{{{P} \\cdot {k} \\cdot {t}}}{{100}} = {r}$.",
        ),
        (
            (
                lambda o: Fraction(o["P"] * o["k"], 100),
                (
                    "The interest is $\\frac{{{P} \\cdot {k}}}{{100}} = {r}$ dollars.",
                    "Each year earns $\\frac{{{k}}}{{100}} \\cdot {P}$, so the interest is "
                    "$\\frac{{{P} \\cdot {k}}}{{100}} = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "officers",
        "the number of ways to choose a president and a vice-president from {n} people",
        _ints(n=(4, 20)),
        lambda o: _f(o["n"] * (o["n"] - 1)),
        (
            "There are ${n} \\cdot {n1} = {r}$ ways to choose a president and then a "
            "vice-president.",
            "The president can be any of {n} and the vice-president any of the other {n1}: "
            "${n} \\times {n1} = {r}$.",
        ),
        (
            (
                lambda o: Fraction(o["n"] * (o["n"] - 1), 2),
                (
                    "There are $\\frac{{{n} \\cdot {n1}}}{{2}} = {r}$ ways to choose a president "
                    "and then a vice-president.",
                    "Choosing 2 of the {n} people: $\\frac{{{n} \\times {n1}}}{{2}} = {r}$.",
                ),
            ),
        ),
        lambda o: {"n1": o["n"] - 1},
    ),
    Concept(
        "average speed",
        "the average speed, in mph, of a trip out at {u} mph and back the same distance at {v} mph",
        lambda rng: _pick(rng, SPEED_PAIRS, "u v"),
        lambda o: Fraction(2 * o["u"] * o["v"], o["u"] + o["v"]),
        (
            "The average speed is $\\frac{{2 \\cdot {u} \\cdot {v}}}{{{u} + {v}}} = {r}$ mph.",
            "Total distance over total time gives $\\frac{{2 \\cdot {u} \\cdot {v}}}{{{u} + "
            "{v}}} = {r}$ mph.",
        ),
        (
            (
                lambda o: Fraction(o["u"] + o["v"], 2),
                (
                    "The average speed is $\\frac{{{u} + {v}}}{{2}} = {r}$ mph.",
                    "Averaging the two speeds gives $\\frac{{{u} + {v}}}{{2}} = {r}$ mph.",
                ),
            ),
        ),
    ),
    Concept(
        "exponents",
        "the exponent $k$ with $2^{{{a}}} \\cdot 2^{{{b}}} = 2^k$",
        _ints(a=(2, 12), b=(2, 12)),
        lambda o: _f(o["a"] + o["b"]),
        (
            "The exponent is ${a} + {b} = {r}$.",
            "Multiplying powers of 2, the exponents give ${a} + {b} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["a"] * o["b"]),
                (
                    "The exponent is ${a} \\cdot {b} = {r}$.",
                    "Multiplying powers of 2, the exponents give ${a} \\cdot {b} = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "supplement",
        "the measure in degrees of the supplement of a {x}-degree angle",
        _ints(x=(10, 80)),
        lambda o: _f(180 - o["x"]),
        (
            "The supplement measures $180 - {x} = {r}$ degrees.",
            "Supplementary angles add up to 180, so $180 - {x} = {r}$.",
        ),
        (
            (
                lambda o: _f(90 - o["x"]),
                (
                    "The supplement measures $90 - {x} = {r}$ degrees.",
                    "Supplementary angles add up to 90, so $90 - {x} = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "prism edges",
        "the number of edges of a prism whose bases have {n} sides",
        _ints(n=(3, 12)),
        lambda o: _f(3 * o["n"]),
        (
            "The prism has $3 \\cdot {n} = {r}$ edges.",
            "Two bases of {n} edges and {n} side edges make $3 \\cdot {n} = {r}$.",
        ),
        (
            (
                lambda o: _f(2 * o["n"]),
                (
                    "The prism has $2 \\cdot {n} = {r}$ edges.",
                    "Two bases of {n} edges make $2 \\cdot {n} = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "trapezoid area",
        "the area of a trapezoid with parallel sides {a} and {b} and height {h}",
        _ints(a=(3, 20), b=(3, 20), h=(2, 12)),
        lambda o: Fraction((o["a"] + o["b"]) * o["h"], 2),
        (
            "The trapezoid's area is $\\frac{{({a} + {b}) \\cdot {h}}}{{2}} = {r}$.",
            "Averaging the parallel sides and multiplying by the height: "
            "$\\frac{{{a} + {b}}}{{2}} \\cdot {h} = {r}$.",
        ),
        (
            (
                lambda o: _f((o["a"] + o["b"]) * o["h"]),
                (
                    "The trapezoid's area is $({a} + {b}) \\cdot {h} = {r}$.",
                    "Adding the parallel sides and multiplying by the height: "
                    "$({a} + {b}) \\cdot {h} = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "exterior angle",
        "the measure in degrees of each exterior angle of a regular polygon with {n} sides",
        lambda rng: {"n": rng.choice([3, 4, 5, 6, 9, 10, 12, 15, 18, 20])},
        lambda o: Fraction(360, o["n"]),
        (
            "Each exterior angle is $\\frac{{360}}{{{n}}} = {r}$ degrees.",
            "The exterior angles add up to 360, so each is $\\frac{{360}}{{{n}}} = {r}$.",
        ),
        (
            (
                lambda o: Fraction(180, o["n"]),
                (
                    "Each exterior angle is $\\frac{{180}}{{{n}}} = {r}$ degrees.",
                    "The exterior angles add up to 180, so each is $\\frac{{180}}{{{n}}} = {r}$.",
                ),
            ),
        ),
    ),
    Concept(
        "least common multiple",
        "the least common multiple of {a} and {b}",
        lambda rng: (lambda g: {"a": g * rng.randint(2, 6), "b": g * rng.randint(7, 11)})(
            rng.randint(2, 5)
        ),
        lambda o: _f(o["a"] * o["b"] // math.gcd(o["a"], o["b"])),
        (
            "The least common multiple of {a} and {b} is $\\frac{{{a} \\cdot {b}}}{{{g}}} = {r}$.",
            "Dividing the product by the greatest common divisor {g}: "
            "$\\frac{{{a} \\cdot {b}}}{{{g}}} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["a"] * o["b"]),
                (
                    "The least common multiple of {a} and {b} is ${a} \\cdot {b} = {r}$.",
                    "The product is a common multiple: ${a} \\cdot {b} = {r}$.",
                ),
            ),
        ),
        lambda o: {"g": math.gcd(o["a"], o["b"])},
    ),
    Concept(
        "odd sum",
        "the sum of the first {n} odd positive integers",
        _ints(n=(3, 30)),
        lambda o: _f(o["n"] ** 2),
        (
            "The sum of the first {n} odd numbers is ${n}^2 = {r}$.",
            "Odd numbers add up to perfect squares, so the sum is ${n}^2 = {r}$.",
        ),
        (
            (
                lambda o: _f(o["n"] * (o["n"] + 1)),
                (
                    "The sum of the first {n} odd numbers is ${n}({n} + 1) = {r}$.",
                    "The sum is ${n} \\cdot {np1} = {r}$.",
                ),
            ),
        ),
        lambda o: {"np1": o["n"] + 1},
    ),
    Concept(
        "square perimeter",
        "the perimeter of a square of area {A}",
        lambda rng: (lambda s: {"A": s * s})(rng.randint(2, 20)),
        lambda o: _f(4 * math.isqrt(o["A"])),
        (
            "The side is $\\sqrt{{{A}}} = {s}$, so the perimeter is $4 \\cdot {s} = {r}$.",
            "The perimeter is four sides of $\\sqrt{{{A}}}$: $4 \\cdot {s} = {r}$.",
        ),
        (
            (
                lambda o: _f(4 * o["A"]),
                (
                    "The perimeter is $4 \\cdot {A} = {r}$.",
                    "The perimeter is four times the area: $4 \\cdot {A} = {r}$.",
                ),
            ),
        ),
        lambda o: {"s": math.isqrt(o["A"])},
    ),
    Concept(
        "discount then markup",
        "the final price of a {w}-dollar item discounted by {p}\\% and then marked up by {p}\\%",
        lambda rng: {
            "w": rng.choice([200, 400, 500, 800, 1000, 1200, 1500, 2000]),
            "p": rng.choice([10, 20, 50]),
        },
        lambda o: Fraction(o["w"] * (100 - o["p"]) * (100 + o["p"]), 10000),
        (
            "The price becomes ${w} \\cdot {dn} \\cdot {up} = {r}$ dollars.",
            "After the discount and the markup the item costs ${w} \\cdot {dn} \\cdot {up} = {r}$.",
        ),
        (
            (
                lambda o: _f(o["w"]),
                (
                    "A {p}\\% discount followed by a {p}\\% markup brings the price back to "
                    "${r}$ dollars.",
                    "The discount and the markup cancel, so the item costs ${r}$.",
                ),
            ),
        ),
        lambda o: {"dn": _decimal(100 - o["p"]), "up": _decimal(100 + o["p"])},
    ),
)

# Defined operations, as MATH's "Define $a \\star b = ...$" problems: the long tail of topics. A
# form is (its LaTeX in x and y, its value); a definition's misconception applies another form.
FORMS: tuple[tuple[str, Callable[[int, int], int]], ...] = (
    ("{x} \\cdot {y}", lambda x, y: x * y),
    ("{x} + {y}", lambda x, y: x + y),
    ("2 \\cdot {x} + {y}", lambda x, y: 2 * x + y),
    ("{x} + 2 \\cdot {y}", lambda x, y: x + 2 * y),
    ("{x} \\cdot {y} + {x}", lambda x, y: x * y + x),
    ("{x} \\cdot {y} - {y}", lambda x, y: x * y - y),
    ("{x}^2 + {y}", lambda x, y: x * x + y),
    ("{x} + {y}^2", lambda x, y: x + y * y),
    ("3 \\cdot {x} + {y}", lambda x, y: 3 * x + y),
    ("2 \\cdot ({x} + {y})", lambda x, y: 2 * (x + y)),
    ("{x} \\cdot ({y} + 1)", lambda x, y: x * (y + 1)),
    ("({x} + 1) \\cdot {y}", lambda x, y: (x + 1) * y),
)
ADJECTIVES = (
    "twisted folded mirrored stacked shifted balanced crossed nested woven split double inner "
    "outer tilted broken linked hollow bright quiet sharp"
).split()
NOUNS = (
    "sum product span weight knot glide merge spread lift drift bond echo pulse blend stride "
    "twist fold reach trace hinge"
).split()
DEFINED = 400  # defined operations (every adjective-noun pair): about one per training problem
ZIPF = 1.0  # topic frequencies fall as 1 / rank**ZIPF: a few common topics and a long tail
LIBRARY_SEED = 0  # the topics are the same in every world


def _defined(name: str, right: int, wrong: int) -> Concept:
    r_form, r_value = FORMS[right]
    w_form, w_value = FORMS[wrong]
    at = {"x": "{a}", "y": "{b}"}
    return Concept(
        name,
        f"the {name} of {{a}} and {{b}}, where the {name} of $x$ and $y$ is "
        + f"${r_form.format(x='x', y='y')}$".replace("{", "{{").replace("}", "}}"),
        _ints(a=(2, 12), b=(2, 12)),
        lambda o: _f(r_value(o["a"], o["b"])),
        (
            f"The {name} of {{a}} and {{b}} is ${r_form.format(**at)} = {{r}}$.",
            f"By the definition, the {name} is ${r_form.format(**at)} = {{r}}$.",
        ),
        (
            (
                lambda o: _f(w_value(o["a"], o["b"])),
                (
                    f"The {name} of {{a}} and {{b}} is ${w_form.format(**at)} = {{r}}$.",
                    f"By the definition, the {name} is ${w_form.format(**at)} = {{r}}$.",
                ),
            ),
        ),
    )


def defined_concepts(n: int = DEFINED, *, seed: int = LIBRARY_SEED) -> tuple[Concept, ...]:
    """``n`` defined operations, each with its own name, form and misconception (another form)."""
    rng = random.Random(seed)
    names = [f"{a} {b}" for a in ADJECTIVES for b in NOUNS]
    rng.shuffle(names)
    out = []
    for name in names[:n]:
        while True:  # two forms that are one function (x(y + 1) and xy + x) are no mistake
            right, wrong = rng.sample(range(len(FORMS)), 2)
            grid = [(x, y) for x in range(2, 6) for y in range(2, 6)]
            if any(FORMS[right][1](x, y) != FORMS[wrong][1](x, y) for x, y in grid):
                break
        out.append(_defined(name, right, wrong))
    return tuple(out)


LIBRARY: tuple[Concept, ...] = CONCEPTS + defined_concepts()
WEIGHTS = tuple(1 / (rank + 1) ** ZIPF for rank in range(len(LIBRARY)))

OPENINGS = (
    "We find each quantity and then add them up.",
    "Let's compute the quantities one at a time and add them.",
    "I'll work out each quantity separately, then take the total.",
)
LEADS = ("", "First, ", "Next, ", "Now, ", "Then ")
TOTALS = (
    "Adding the results, ${terms} = {r}$.",
    "The total is ${terms} = {r}$.",
    "So the sum is ${terms} = {r}$.",
)


@dataclass(frozen=True)
class Part:
    concept: Concept
    ops: Ops
    value: int
    wrong_values: tuple[int, ...]


@dataclass(frozen=True)
class Problem:
    text: str
    parts: tuple[Part, ...]
    answer: int
    solve_rate: float

    @property
    def numbers(self) -> list[int]:
        """Every number the problem states (what a copied wrong number is taken from)."""
        return [v for p in self.parts for v in p.ops.values()]


@dataclass(frozen=True)
class Sample:
    """One sampled solution with its truth: the step where it first goes wrong (-1: sound) and
    the kind of that error."""

    solution: Solution
    first_error: int
    kind: str | None


def _part(concept: Concept, rng: random.Random) -> Part:
    while True:
        ops = concept.draw(rng)
        value = _whole(concept.right(ops))
        wrongs = tuple(_whole(w(ops)) for w, _ in concept.wrongs)
        if value is not None and all(w is not None and w != value for w in wrongs):
            return Part(concept, ops, value, tuple(w for w in wrongs if w is not None))


def make_problem(
    rng: random.Random, index: int, *, avoid_test_split: bool, tail: bool = False
) -> Problem:
    """A problem of 2 to 4 parts on distinct concepts (``CONCEPTS`` uniformly; with ``tail``,
    ``LIBRARY`` by ``WEIGHTS``); with ``avoid_test_split``, a text that ``prm.split_of`` puts in
    train or validation, so ``prm.train`` uses every problem drawn."""
    while True:
        want = rng.randint(2, 4)
        if tail:
            concepts: list[Concept] = []
            while len(concepts) < want:
                c = rng.choices(LIBRARY, WEIGHTS)[0]
                if c not in concepts:
                    concepts.append(c)
        else:
            concepts = rng.sample(CONCEPTS, want)
        parts = tuple(_part(c, rng) for c in concepts)
        asks = [p.concept.ask.format(**p.ops) for p in parts]
        listed = "; ".join(asks[:-1]) + f"; and {asks[-1]}"
        text = f"Problem {index}. Add up the following quantities: {listed}. What is the total?"
        if not avoid_test_split or split_of(text) != "test":
            return Problem(text, parts, sum(p.value for p in parts), rng.uniform(*SOLVE_RATE))


def _lead(rng: random.Random, text: str) -> str:
    lead = rng.choice(LEADS)
    if not lead or text.startswith("$"):
        return text
    return lead + text[0].lower() + text[1:]


def _copied(part: Part, problem: Problem, rng: random.Random) -> tuple[Ops, int] | None:
    """The part's operands with one replaced by another number of the problem, and the value the
    right method gives with it; None when no such number gives a whole, different value."""
    keys = list(part.ops)
    others = [n for n in problem.numbers if n not in part.ops.values()]
    tries = [(k, n) for k in keys for n in others]
    rng.shuffle(tries)
    for key, number in tries[:12]:
        ops = {**part.ops, key: number}
        try:
            value = _whole(part.concept.right(ops))
            part.concept.fields(ops, 0)
        except (ZeroDivisionError, ValueError):
            continue
        if value is not None and value != part.value:
            return ops, value
    return None


def _slip(value: int, rng: random.Random) -> int:
    wrong = value + rng.choice([-1, 1]) * rng.randint(1, 9)
    return wrong if wrong > 0 and wrong != value else value + 10


def sample(problem: Problem, rng: random.Random, *, mix: Sequence[float] = MIX) -> Sample:
    """One solution to ``problem``: each computing step (every part, then the total) goes wrong
    with the problem's per-step error chance, in a kind drawn from ``mix``."""
    computing = len(problem.parts) + 1
    error_chance = 1 - problem.solve_rate ** (1 / computing)
    steps = [rng.choice(OPENINGS)]
    sound: list[bool] = [True]
    kind_first: str | None = None
    values = []
    for part in problem.parts:
        kind = rng.choices(ERROR_KINDS, mix)[0] if rng.random() < error_chance else None
        ops, template, value = part.ops, rng.choice(part.concept.right_steps), part.value
        if kind == COPIED_NUMBER:
            copied = _copied(part, problem, rng)
            kind = WRONG_METHOD if copied is None else kind
            if copied is not None:
                ops, value = copied
        if kind == WRONG_METHOD:
            k = rng.randrange(len(part.wrong_values))
            value, template = part.wrong_values[k], rng.choice(part.concept.wrongs[k][1])
        elif kind == SLIP:
            template, value = part.concept.right_steps[0], _slip(part.value, rng)
        steps.append(_lead(rng, template.format(**part.concept.fields(ops, value))))
        values.append(value)
        if kind is not None and kind_first is None:
            kind_first = kind
        sound.append(kind_first is None)
    kind = rng.choices(ERROR_KINDS, mix)[0] if rng.random() < error_chance else None
    shown = list(values)
    total = sum(values)
    if kind == WRONG_METHOD:  # a part subtracted instead of added
        k = rng.randrange(1, len(shown))
        total = sum(values) - 2 * values[k]
        terms = " + ".join(map(str, shown[:k])) + f" - {shown[k]}"
        terms += "".join(f" + {v}" for v in shown[k + 1 :])
        if total <= 0:
            kind, total, terms = None, sum(values), " + ".join(map(str, shown))
    else:
        if kind == COPIED_NUMBER:  # one part's result replaced by a number of the problem
            k = rng.randrange(len(shown))
            choices = [n for n in problem.numbers if n != shown[k]]
            shown[k] = rng.choice(choices)
            total = sum(shown)
        elif kind == SLIP:
            total = _slip(sum(values), rng)
        terms = " + ".join(map(str, shown))
    steps.append(rng.choice(TOTALS).format(terms=terms, r=total))
    if kind is not None and kind_first is None:
        kind_first = kind
    sound.append(kind_first is None)
    steps.append(f"# Answer\n\n{total}")
    sound.append(kind_first is None)
    first = sound.index(False) if False in sound else -1
    solution = Solution(
        problem.text, tuple(steps), tuple(sound), str(total), total == problem.answer
    )
    return Sample(solution, first, kind_first)


@dataclass(frozen=True)
class World:
    """Per-problem pools: ``train[i]`` the samples of training problem ``i``, ``held_out``
    likewise; each sample's ``solution.labels`` is the truth (not what a labeller says)."""

    train: list[list[Sample]]
    held_out: list[list[Sample]]
    seed: int
    mix: tuple[float, ...]
    tail: bool = False


def world(
    *, train_problems: int, held_out_problems: int, pool: int, seed: int = 0,
    mix: Sequence[float] = MIX, tail: bool = False,
) -> World:  # fmt: skip
    """``train_problems`` and ``held_out_problems`` problems with ``pool`` samples each; ``tail``
    adds the defined operations (``LIBRARY``) to the topics."""
    rng = random.Random(seed)
    problems = [
        make_problem(rng, i, avoid_test_split=i < train_problems, tail=tail)
        for i in range(train_problems + held_out_problems)
    ]
    pools = [[sample(p, rng, mix=mix) for _ in range(pool)] for p in problems]
    return World(pools[:train_problems], pools[train_problems:], seed, tuple(mix), tail)

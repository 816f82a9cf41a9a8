"""The 29 school topics of the world's problems (``bench/prm800k_world.py``), in two parts of one
order (``CONCEPTS``): each with its numbers, its right method and a well-known misconception of it.
The order is the world's: a world drawn from the same seed is the same world."""

from __future__ import annotations

import math
from fractions import Fraction

from bench.prm800k_concept import (
    TRIPLES,
    Concept,
    decimal_of,
    frac,
    ints,
    pick,
)

# Areas, counting, angles, percentages, divisors, sequences, solids and right triangles.
FIRST: tuple[Concept, ...] = (
    Concept(
        "rectangle area",
        "the area of a rectangle with sides {a} and {b}",
        ints(a=(3, 19), b=(3, 19)),
        lambda o: frac(o["a"] * o["b"]),
        (
            "The area of the rectangle is ${a} \\times {b} = {r}$.",
            "The rectangle's area is length times width, ${a} \\cdot {b} = {r}$.",
        ),
        (
            (
                lambda o: frac(2 * (o["a"] + o["b"])),
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
        ints(b=(3, 20), h=(3, 20)),
        lambda o: Fraction(o["b"] * o["h"], 2),
        (
            "The area of the triangle is $\\frac{{1}}{{2}} \\cdot {b} \\cdot {h} = {r}$.",
            "Half of base times height gives $\\frac{{{b} \\cdot {h}}}{{2}} = {r}$ for the "
            "triangle.",
        ),
        (
            (
                lambda o: frac(o["b"] * o["h"]),
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
        ints(n=(4, 25)),
        lambda o: Fraction(o["n"] * (o["n"] - 1), 2),
        (
            "Each of the {n} people shakes {n1} hands and each handshake is counted twice, so "
            "there are $\\frac{{{n} \\cdot {n1}}}{{2}} = {r}$ handshakes.",
            "The handshakes number $\\frac{{{n}({n} - 1)}}{{2}} = {r}$.",
        ),
        (
            (
                lambda o: frac(o["n"] * (o["n"] - 1)),
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
        ints(n=(5, 40)),
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
        lambda o: frac(o["b"] - o["a"] + 1),
        (
            "The integers from {a} to {b} number ${b} - {a} + 1 = {r}$.",
            "Counting from {a} through {b} gives ${b} - {a} + 1 = {r}$ integers.",
        ),
        (
            (
                lambda o: frac(o["b"] - o["a"]),
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
        ints(n=(5, 12)),
        lambda o: frac((o["n"] - 2) * 180),
        (
            "The sum of the interior angles is $({n} - 2) \\cdot 180 = {r}$ degrees.",
            "A polygon with {n} sides splits into {n2} triangles, so its angles add up to "
            "${n2} \\cdot 180 = {r}$ degrees.",
        ),
        (
            (
                lambda o: frac(o["n"] * 180),
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
        ints(n=(5, 20)),
        lambda o: Fraction(o["n"] * (o["n"] - 3), 2),
        (
            "A polygon with {n} sides has $\\frac{{{n}({n} - 3)}}{{2}} = {r}$ diagonals.",
            "Each vertex joins {n3} others by a diagonal and each diagonal has two ends, so "
            "there are $\\frac{{{n} \\cdot {n3}}}{{2}} = {r}$.",
        ),
        (
            (
                lambda o: frac(o["n"] * (o["n"] - 3)),
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
                lambda o: frac(o["w"] + o["p"]),
                (
                    "Increasing {w} by {p}\\% gives ${w} + {p} = {r}$.",
                    "The increase is {p}, so the new value is ${w} + {p} = {r}$.",
                ),
            ),
        ),
        lambda o: {"up": decimal_of(100 + o["p"])},
    ),
    Concept(
        "minutes",
        "the number of minutes in {h} hours and {m} minutes",
        ints(h=(2, 9), m=(5, 55)),
        lambda o: frac(60 * o["h"] + o["m"]),
        (
            "{h} hours and {m} minutes is ${h} \\cdot 60 + {m} = {r}$ minutes.",
            "In minutes that is $60 \\cdot {h} + {m} = {r}$.",
        ),
        (
            (
                lambda o: frac(100 * o["h"] + o["m"]),
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
            **pick(rng, [(2, 3), (2, 5), (3, 5), (2, 7)], "p q"),
            "a": rng.randint(1, 6),
            "b": rng.randint(1, 6),
        },
        lambda o: frac((o["a"] + 1) * (o["b"] + 1)),
        (
            "${p}^{{{a}}} \\cdot {q}^{{{b}}}$ has $({a} + 1)({b} + 1) = {r}$ divisors.",
            "Each exponent can be taken from 0 up, so the count is "
            "$({a} + 1) \\cdot ({b} + 1) = {r}$.",
        ),
        (
            (
                lambda o: frac(o["a"] * o["b"]),
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
        ints(a=(1, 20), d=(2, 9), n=(5, 30)),
        lambda o: frac(o["a"] + (o["n"] - 1) * o["d"]),
        (
            "The {n}th term is ${a} + ({n} - 1) \\cdot {d} = {r}$.",
            "Adding the difference {n1} times, ${a} + {n1} \\cdot {d} = {r}$.",
        ),
        (
            (
                lambda o: frac(o["a"] + o["n"] * o["d"]),
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
        ints(a=(1, 5), q=(2, 3), n=(3, 7)),
        lambda o: frac(o["a"] * o["q"] ** (o["n"] - 1)),
        (
            "The {n}th term is ${a} \\cdot {q}^{{{n1}}} = {r}$.",
            "Multiplying by {q} another {n1} times gives ${a} \\cdot {q}^{{{n1}}} = {r}$.",
        ),
        (
            (
                lambda o: frac(o["a"] * o["q"] ** o["n"]),
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
        ints(s=(2, 15)),
        lambda o: frac(6 * o["s"] ** 2),
        (
            "The surface area of the cube is $6 \\cdot {s}^2 = {r}$.",
            "A cube has 6 faces of area ${s}^2$, so $6 \\cdot {s}^2 = {r}$.",
        ),
        (
            (
                lambda o: frac(o["s"] ** 3),
                (
                    "The surface area of the cube is ${s}^3 = {r}$.",
                    "A cube's surface is its edge cubed, ${s}^3 = {r}$.",
                ),
            ),
            (
                lambda o: frac(4 * o["s"] ** 2),
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
        ints(l=(2, 12), w=(2, 12), h=(2, 12)),
        lambda o: frac(o["l"] * o["w"] * o["h"]),
        (
            "The volume of the box is ${l} \\cdot {w} \\cdot {h} = {r}$.",
            "Length times width times height: ${l} \\times {w} \\times {h} = {r}$.",
        ),
        (
            (
                lambda o: frac(2 * (o["l"] * o["w"] + o["w"] * o["h"] + o["l"] * o["h"])),
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
            frac(math.isqrt(s)) if math.isqrt(s := o["a"] ** 2 + o["b"] ** 2) ** 2 == s else frac(0)
        ),
        (
            "The hypotenuse is $\\sqrt{{{a}^2 + {b}^2}} = {r}$.",
            "By Pythagoras the hypotenuse is $\\sqrt{{{a2} + {b2}}} = {r}$.",
        ),
        (
            (
                lambda o: frac(o["a"] + o["b"]),
                (
                    "The hypotenuse is ${a} + {b} = {r}$.",
                    "The hypotenuse is the sum of the legs, ${a} + {b} = {r}$.",
                ),
            ),
        ),
        lambda o: {"a2": o["a"] ** 2, "b2": o["b"] ** 2},
    ),
)

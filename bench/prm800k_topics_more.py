"""The second part of the world's school topics (``bench/prm800k_topics.py``'s order continues
here): averages, rates, interest, choices, exponents, angles, solids, multiples and discounts."""

from __future__ import annotations

import math
from fractions import Fraction

from bench.prm800k_concept import (
    SPEED_PAIRS,
    WORK_PAIRS,
    Concept,
    decimal_of,
    frac,
    ints,
    pick,
)
from bench.prm800k_topics import FIRST

SECOND: tuple[Concept, ...] = (
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
        lambda rng: pick(rng, WORK_PAIRS, "a b"),
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
        ints(n=(4, 20)),
        lambda o: frac(o["n"] * (o["n"] - 1)),
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
        lambda rng: pick(rng, SPEED_PAIRS, "u v"),
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
        ints(a=(2, 12), b=(2, 12)),
        lambda o: frac(o["a"] + o["b"]),
        (
            "The exponent is ${a} + {b} = {r}$.",
            "Multiplying powers of 2, the exponents give ${a} + {b} = {r}$.",
        ),
        (
            (
                lambda o: frac(o["a"] * o["b"]),
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
        ints(x=(10, 80)),
        lambda o: frac(180 - o["x"]),
        (
            "The supplement measures $180 - {x} = {r}$ degrees.",
            "Supplementary angles add up to 180, so $180 - {x} = {r}$.",
        ),
        (
            (
                lambda o: frac(90 - o["x"]),
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
        ints(n=(3, 12)),
        lambda o: frac(3 * o["n"]),
        (
            "The prism has $3 \\cdot {n} = {r}$ edges.",
            "Two bases of {n} edges and {n} side edges make $3 \\cdot {n} = {r}$.",
        ),
        (
            (
                lambda o: frac(2 * o["n"]),
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
        ints(a=(3, 20), b=(3, 20), h=(2, 12)),
        lambda o: Fraction((o["a"] + o["b"]) * o["h"], 2),
        (
            "The trapezoid's area is $\\frac{{({a} + {b}) \\cdot {h}}}{{2}} = {r}$.",
            "Averaging the parallel sides and multiplying by the height: "
            "$\\frac{{{a} + {b}}}{{2}} \\cdot {h} = {r}$.",
        ),
        (
            (
                lambda o: frac((o["a"] + o["b"]) * o["h"]),
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
        lambda o: frac(o["a"] * o["b"] // math.gcd(o["a"], o["b"])),
        (
            "The least common multiple of {a} and {b} is $\\frac{{{a} \\cdot {b}}}{{{g}}} = {r}$.",
            "Dividing the product by the greatest common divisor {g}: "
            "$\\frac{{{a} \\cdot {b}}}{{{g}}} = {r}$.",
        ),
        (
            (
                lambda o: frac(o["a"] * o["b"]),
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
        ints(n=(3, 30)),
        lambda o: frac(o["n"] ** 2),
        (
            "The sum of the first {n} odd numbers is ${n}^2 = {r}$.",
            "Odd numbers add up to perfect squares, so the sum is ${n}^2 = {r}$.",
        ),
        (
            (
                lambda o: frac(o["n"] * (o["n"] + 1)),
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
        lambda o: frac(4 * math.isqrt(o["A"])),
        (
            "The side is $\\sqrt{{{A}}} = {s}$, so the perimeter is $4 \\cdot {s} = {r}$.",
            "The perimeter is four sides of $\\sqrt{{{A}}}$: $4 \\cdot {s} = {r}$.",
        ),
        (
            (
                lambda o: frac(4 * o["A"]),
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
                lambda o: frac(o["w"]),
                (
                    "A {p}\\% discount followed by a {p}\\% markup brings the price back to "
                    "${r}$ dollars.",
                    "The discount and the markup cancel, so the item costs ${r}$.",
                ),
            ),
        ),
        lambda o: {"dn": decimal_of(100 - o["p"]), "up": decimal_of(100 + o["p"])},
    ),
)

# The world's order: the first part, then this one.
CONCEPTS: tuple[Concept, ...] = (*FIRST, *SECOND)

"""Defined operations, the long tail of the world's topics, and the library the world draws from
(``LIBRARY``: the school topics, then 400 defined operations, with Zipf ``WEIGHTS``)."""

from __future__ import annotations

import random
from collections.abc import Callable

from bench.prm800k_concept import (
    Concept,
    frac,
    ints,
)
from bench.prm800k_topics_more import CONCEPTS

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
        ints(a=(2, 12), b=(2, 12)),
        lambda o: frac(r_value(o["a"], o["b"])),
        (
            f"The {name} of {{a}} and {{b}} is ${r_form.format(**at)} = {{r}}$.",
            f"By the definition, the {name} is ${r_form.format(**at)} = {{r}}$.",
        ),
        (
            (
                lambda o: frac(w_value(o["a"], o["b"])),
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

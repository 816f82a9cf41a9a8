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

import random
from collections.abc import Sequence
from dataclasses import dataclass

from bench.prm800k_concept import Concept, Ops, whole_value
from bench.prm800k_defined import LIBRARY, WEIGHTS
from bench.prm800k_topics_more import CONCEPTS
from prm.data import Solution, split_of

WRONG_METHOD, COPIED_NUMBER, SLIP = "wrong method", "copied wrong number", "arithmetic slip"
ERROR_KINDS = (WRONG_METHOD, COPIED_NUMBER, SLIP)
MIX = (0.9, 0.0, 0.1)  # shares of ERROR_KINDS among errors (why: the module's docstring)
COPIED_MIX = (0.6, 0.3, 0.1)  # the variant where a third of the other errors are copied numbers
SOLVE_RATE = (0.05, 0.95)  # a problem's chance that a sample has no error, uniform in this range


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
        value = whole_value(concept.right(ops))
        wrongs = tuple(whole_value(w(ops)) for w, _ in concept.wrongs)
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
            value = whole_value(part.concept.right(ops))
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

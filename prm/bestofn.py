"""The best-of-N curve: accuracy against N for reward models, majority vote, random and the oracle.

For each problem with several graded solutions and each N (1, 2, 4, ... up to the most solutions
any problem has), pick one of N of its solutions by each method and score whether its final answer
is right; the curve is the mean over problems of the expected accuracy over N-subsets. A problem
with at most N solutions uses all of them (so the last point is "all the solutions there are").
Subsets are enumerated when there are at most ``samples`` of them, else ``samples`` are drawn at
random (seeded), so small fixtures are exact.

Methods: each reward model's pick (highest score; ties to the earlier solution), majority vote over
final answers (the most frequent answer; ties to the answer that came first; a subset with no
answer at all scores 0), random (the subset's share of right answers: its expectation) and the
oracle (any right answer in the subset), which bounds every method from above.

``python -m prm bestofn`` prints it for a file; active-learning runs store it (``learning.run``).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prm.data import Dataset, Solution, read_dataset, split_of

if TYPE_CHECKING:
    from prm.scoring import Scorer

BASELINES = ("majority", "random", "oracle")


@dataclass(frozen=True)
class Candidate:
    """One graded solution: its final answer (normalised), correctness and each method's score."""

    answer: str | None
    correct: bool
    scores: dict[str, float] = field(default_factory=dict)


def n_values(most: int) -> list[int]:
    """1, 2, 4, ... below ``most``, and ``most`` itself."""
    out, n = [], 1
    while n < most:
        out.append(n)
        n *= 2
    if most >= 1:
        out.append(most)
    return out


def _pick(cands: Sequence[Candidate], method: str) -> bool:
    best = max(range(len(cands)), key=lambda i: (cands[i].scores[method], -i))
    return cands[best].correct


def _vote(cands: Sequence[Candidate]) -> bool:
    counts = Counter(c.answer for c in cands if c.answer is not None)
    if not counts:
        return False
    top = max(counts.values())
    winner = next(c for c in cands if c.answer is not None and counts[c.answer] == top)
    return winner.correct


def _subsets(m: int, n: int, samples: int, rng: random.Random) -> list[tuple[int, ...]]:
    if n >= m:
        return [tuple(range(m))]
    if math.comb(m, n) <= samples:
        return list(itertools.combinations(range(m), n))
    return [tuple(sorted(rng.sample(range(m), n))) for _ in range(samples)]


def curve(
    groups: Sequence[Sequence[Candidate]],
    *,
    methods: Sequence[str] | None = None,
    samples: int = 256,
    seed: int = 0,
) -> dict[str, Any]:
    """Accuracy at each N of every method (``methods``: the candidates' score names) and of the
    baselines, over the problems in ``groups`` (each a problem's candidates; fewer than 2: left
    out). Returns ``{"problems", "most", "n", "accuracy": {method: [...]}, "problems_at_n"}``."""
    groups = [list(g) for g in groups if len(g) >= 2]
    if methods is None:
        methods = sorted({k for g in groups for c in g for k in c.scores})
    most = max((len(g) for g in groups), default=0)
    ns = n_values(most)
    names = [*methods, *BASELINES]
    totals = {name: [0.0] * len(ns) for name in names}
    rng = random.Random(seed)
    for g in groups:
        for j, n in enumerate(ns):
            subsets = _subsets(len(g), n, samples, rng)
            sums = dict.fromkeys(names, 0.0)
            for subset in subsets:
                cands = [g[i] for i in subset]
                for method in methods:
                    sums[method] += _pick(cands, method)
                sums["majority"] += _vote(cands)
                sums["random"] += sum(c.correct for c in cands) / len(cands)
                sums["oracle"] += any(c.correct for c in cands)
            for name in names:
                totals[name][j] += sums[name] / len(subsets)
    count = len(groups)
    return {
        "problems": count,
        "most": most,
        "n": ns,
        "accuracy": {
            name: [v / count if count else None for v in values] for name, values in totals.items()
        },
        "problems_at_n": [sum(1 for g in groups if len(g) >= n) for n in ns],
        "subsets": samples,
        "seed": seed,
    }


def normalise_answer(answer: str | None) -> str | None:
    """Final answers compared for the vote: whitespace, ``$`` and a trailing full stop ignored."""
    if answer is None:
        return None
    text = " ".join(str(answer).split()).strip("$ .")
    return text or None


def graded_groups(dataset: Dataset, *, split: str = "test") -> list[list[Solution]]:
    """The rows of ``split`` (``"all"``: every row) with a graded answer, grouped by problem
    (problems with at least 2), in file order."""
    groups: dict[str, list[Solution]] = defaultdict(list)
    for s in dataset.solutions:
        if s.answer_correct is None or (split != "all" and split_of(s.problem) != split):
            continue
        groups[s.problem].append(s)
    return [g for g in groups.values() if len(g) >= 2]


def evaluate_models(
    models: dict[str, tuple[Scorer, str]],
    data: str | Path | Dataset,
    *,
    split: str = "test",
    samples: int = 256,
    seed: int = 0,
) -> dict[str, Any]:
    """The curve for ``models`` (``{name: (scorer, aggregate)}``, e.g. ``{"prm product":
    (prm, "product"), "orm": (orm, "last")}``) on the graded rows of ``split`` of ``data``."""
    from prm.metrics import aggregate

    dataset = read_dataset(data) if isinstance(data, str | Path) else data
    groups = graded_groups(dataset, split=split)
    rows = [s for g in groups for s in g]
    scored: dict[int, dict[str, float]] = defaultdict(dict)
    probs_of: dict[int, list[list[float]]] = {}
    for name, (scorer, how) in models.items():
        key = id(scorer)
        if key not in probs_of:
            probs_of[key] = scorer.score(rows) if rows else []
        for k, probs in enumerate(probs_of[key]):
            scored[k][name] = aggregate(probs, how)
    candidates, k = [], 0
    for g in groups:
        group = []
        for s in g:
            group.append(Candidate(normalise_answer(s.answer), bool(s.answer_correct), scored[k]))
            k += 1
        candidates.append(group)
    result = curve(candidates, methods=list(models), samples=samples, seed=seed)
    result["split"] = split
    result["solutions"] = len(rows)
    return result


def format_curve(result: dict[str, Any]) -> str:
    """The curve as a table: one line per method, one column per N."""
    if not result["problems"]:
        return "best-of-N: no problem has several solutions with a graded answer"
    head = f"{'N':<14}" + "".join(f"{n:>8}" for n in result["n"])
    lines = [
        f"best-of-N on {result['problems']} problems ({result.get('split', '')} split, "
        f"{result.get('solutions', '?')} graded solutions, at most {result['most']} each)",
        head,
        f"{'problems':<14}" + "".join(f"{p:>8}" for p in result["problems_at_n"]),
    ]
    for name, values in result["accuracy"].items():
        lines.append(f"{name:<14}" + "".join(f"{v:>8.3f}" for v in values))
    return "\n".join(lines)

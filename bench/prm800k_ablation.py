"""PRM800K's active-learning ablation (section 4.2, figure 4a), reproduced as a benchmark.

The paper's setting: a strong PRM (PRM_large) labels; a small *selector* PRM, trained on one
labelled sample per problem, scores a large pool of samples per problem (1,000 there); for each
problem 80% of the chosen samples are its most convincing wrong-answer samples (highest selector
score, wrong final answer) and 20% the most convincing of the rest; small PRMs trained on N
labelled samples per problem are compared by best-of-N accuracy on held-out problems, and the
2.6x is the ratio of the slopes of accuracy against log(labels), active over uniform.

This harness does exactly that with the app's own pieces: the strategies are
``learning.strategies`` applied to one problem's pool at a time (``strategy_order`` over
``learning.ordering.Scored``: ``convincing-wrong`` is then PRM800K's per-problem 80/20 rule), the
labelled samples are written as a ``trl`` file (``prompt``, ``completions``, ``labels``, cut after
the first negative step, as the app's export), ``prm.train`` trains a ``bow`` PRM on it, and
best-of-K on held-out problems picks by the product of its step scores (``prm.metrics``). Per
strategy, accuracy is fitted against log2(N) over the N values; the slope ratio over uniform's has
a 95% bootstrap interval over held-out problems and seeds (both resampled, every strategy and
uniform together). Pools:

- ``world`` (``bench.prm800k_world``): generated problems with known step correctness, errors of
  kinds the ``bow`` features do not read off (a wrong method, well-formed, its arithmetic right; a
  tenth are arithmetic slips the exact checks catch), labelled by the truth with ``--noise`` of
  the step labels flipped (the strong labeller); held out: other problems of the same world;
  ``copied``: the same with a third of the wrong methods turned into copied wrong numbers, which
  the student cannot see; ``tail``: the same with a long tail of topics (defined operations);
- ``phase1``: PRM800K phase 1's real paths and human ratings (``../shared/data``), a problem's
  pool its labelled paths (the chosen path and each rated alternative; about 30 a problem, most
  without a final answer); held out: the Qwen2.5-Math samples of 100 MATH problems (8 each) and
  GPT-3's solutions of the 1,319 GSM8K test problems (4 each), best-of-4; problems in MATH-500
  or in the held-out sets are never trained on;
- ``served`` (``--served URL MODEL``): the world again with a PRM served on vLLM's ``/pooling``
  API as the labeller (a step is positive when its P(correct) is at least 0.5) and as a second
  selector beside the ``bow`` one trained on its labels (what the app's ``served-prm`` does).

``machines-disagree`` needs the other machines' word on each step: simulated from the truth as in
``bench/active_learning.py`` (``simulate_evidence``: rollouts from each step, a judge) and read by
``learning.machine_evidence.machine_conflict`` with the selector's step scores. ``ensemble`` is
ActPRM's: 4 more ``bow`` selectors on bootstrap resamples of the selector's labels by problem.

``--map``: the selector-quality map. The same harness on the world with *planted* selectors, the
truth plus Gaussian noise of a controlled sd on each step (``planted``), whose AUROC at finding the
samples with an error is measured, and the trained ``bow`` selector as a point among them; for each
strategy the AUROC at which its slope ratio crosses 1.0x and 1.5x with the interval above 1.

    python -m bench.prm800k_ablation            # 3 worlds + phase 1: 14 CPU minutes
    python -m bench.prm800k_ablation --map      # the selector-quality map: 15 CPU minutes
    python -m bench.prm800k_ablation --quick    # either, smaller: a few minutes
    python -m bench.prm800k_ablation --served http://gpu-box:8001 Qwen/Qwen2.5-Math-PRM-7B
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.prm800k_world import COPIED_MIX, ERROR_KINDS, MIX, World, world
from bench.prm_common import ROOT, require, shared_data
from prm.data import Solution

UNIFORM = "uniform"
STRATEGIES = ("convincing-wrong", "uncertainty", "ensemble", "machines-disagree")
WRONG_SHARE = 0.8  # PRM800K's rule: 80% convincing wrong answers per problem
MEMBERS = 4  # the ensemble's extra selectors (``learning.strategies.ENSEMBLE_MEMBERS``)
SIGMAS = (0.3, 0.5, 0.8, 1.2, 2.0, 3.5)  # the planted selectors' noise: AUROC ~1.0 to ~0.6
BOOT = 1000


# -- pools -------------------------------------------------------------------------------------


@dataclass
class Pools:
    """Per-problem pools: ``train[i]`` the samples of training problem ``i`` (their ``labels``:
    the truth or the human ratings, what evidence is simulated from), ``held_out`` the graded
    samples best-of-K picks among. ``kinds``: the error kind of each training sample (the world
    only)."""

    name: str
    train: list[list[Solution]]
    held_out: list[list[Solution]]
    k: int
    kinds: list[list[str | None]] | None = None
    note: str = ""

    @property
    def flat(self) -> list[Solution]:
        return [s for pool in self.train for s in pool]

    def starts(self) -> list[int]:
        out = [0]
        for pool in self.train:
            out.append(out[-1] + len(pool))
        return out


def world_pools(w: World, *, k: int) -> Pools:
    return Pools(
        "world",
        [[s.solution for s in pool] for pool in w.train],
        [[s.solution for s in pool] for pool in w.held_out],
        k,
        kinds=[[s.kind for s in pool] for pool in w.train],
    )


def _normalise(text: str) -> str:
    return " ".join(text.split())


def phase1_pools(data: Path, *, k: int, limit: int | None = None) -> Pools:
    """PRM800K phase 1's labelled paths by problem, without MATH-500's problems and the held-out
    sets'; held out: the Qwen2.5-Math samples (100 MATH problems, 8 each) and GPT-3's GSM8K
    solutions (1,319 problems, 4 each), as ``bench/active_learning.py`` measures best-of-N."""
    import prm
    from bench.prm_best_of_n import gsm8k_groups, qwen_groups

    held: list[list[Solution]] = []
    qwen = qwen_groups(require(data / "qwen25math_math_samples" / "math_cot_100.jsonl"))
    gsm8k = gsm8k_groups(require(data / "gsm8k_model_solutions" / "example_model_solutions.jsonl"))
    for g in qwen + gsm8k:
        cands = [
            Solution(g["problem"], tuple(steps), None, answer, ok)
            for steps, answer, ok in g["candidates"]
            if steps
        ]
        if len(cands) >= 2:
            held.append(cands)
    banned = {_normalise(g[0].problem) for g in held}
    math500 = require(data / "math500" / "test.jsonl")
    banned |= {_normalise(json.loads(line)["problem"]) for line in math500.open(encoding="utf-8")}
    path = require(data / "prm800k_phase1_human_labels" / "phase1_train.trajectories.jsonl")
    by_problem: dict[str, list[Solution]] = {}
    dropped = set()
    for s in prm.read_dataset(path).solutions:
        if _normalise(s.problem) in banned:
            dropped.add(s.problem)
        elif s.labels is not None:
            by_problem.setdefault(s.problem, []).append(s)
    train = list(by_problem.values())[:limit]
    note = (
        f"{len(dropped)} phase 1 problems left out (in MATH-500 or the held-out set); pool sizes "
        f"median {statistics.median(len(p) for p in train):.0f}, "
        + ", ".join(
            f"{sum(len(p) >= n for p in train) / len(train):.0%} with at least {n}"
            for n in (8, 16, 32)
        )
        + f"; {sum(s.answer_correct is not None for p in train for s in p):,} of "
        f"{sum(map(len, train)):,} paths reach a graded final answer"
    )
    return Pools("phase1", train, held, k, note=note)


class Featurised:
    """Every sample of some pools prepared once (``bench.active_learning.Pool``), and each
    prefix put in ``cache`` too: a labelled sample is cut after its first negative step, and a
    ``bow`` step depends only on the steps before it, so the cut row needs no featurising."""

    def __init__(self, solutions: list[Solution], *, backbone: Any, cache: dict) -> None:
        from bench.active_learning import Pool

        self.pool = Pool(solutions, backbone=backbone, cache=cache)
        for s in solutions:
            items = cache[(s.problem, tuple(s.steps))]
            for j in range(1, len(s.steps)):
                cache.setdefault((s.problem, tuple(s.steps[:j])), items[:j])

    def probs(self, scorer: Any) -> list[np.ndarray]:
        """Each sample's calibrated P(correct) per step under ``scorer``."""
        return list(self.pool.per_solution(scorer))


# -- labellers and selectors ---------------------------------------------------------------------


def noisy_labels(pools: Pools, *, noise: float, seed: int) -> list[tuple[bool, ...]]:
    """The strong labeller's labels of every training sample: the truth with each step's label
    flipped with probability ``noise`` (drawn once per seed, so a sample chosen twice reads the
    same)."""
    rng = random.Random(seed * 7919 + 3)
    out = []
    for s in pools.flat:
        assert s.labels is not None
        out.append(tuple(lab != (rng.random() < noise) for lab in s.labels))
    return out


@dataclass
class Selection:
    """What a selector says of every training sample: its step P(correct), the ensemble's
    disagreement, the machines' conflict; ``auroc``: how well its product score finds the samples
    with an error (measured on the truth)."""

    name: str
    probs: list[np.ndarray]
    disagreement: list[float] | None = None
    conflict: list[float | None] = field(default_factory=list)
    auroc: float = math.nan


def solution_auroc(pools: Pools, probs: Sequence[np.ndarray]) -> float:
    """AUROC of ranking the training samples with an error (by the truth) below the sound ones,
    by the product of the step scores."""
    from prm.metrics import auroc, solution_score

    sound = [bool(all(s.labels or ())) for s in pools.flat]
    return float(auroc(np.asarray(sound), np.asarray([solution_score(list(p)) for p in probs])))


def planted(pools: Pools, *, sigma: float, seed: int) -> tuple[list[np.ndarray], list[float]]:
    """A selector of controlled quality: each step's P(correct) is the truth (1 while the sample
    is sound, 0 from its first error on) plus Gaussian noise of sd ``sigma``, through a logistic
    (as ``bench/al_selector_sweep.py`` plants one); and the spread of ``MEMBERS`` + 1 such draws,
    each with its own noise (the ensemble's disagreement)."""
    from prm.metrics import solution_spread

    rng = np.random.default_rng(seed * 1009 + round(sigma * 1000))
    flat = pools.flat
    truth = np.concatenate([np.asarray(s.labels, dtype=float) for s in flat])
    starts = np.concatenate([[0], np.cumsum([len(s.steps) for s in flat])])

    def draw() -> np.ndarray:  # clipped where exp overflows: no sd the map uses comes near
        noisy = truth + rng.normal(0.0, sigma, len(truth)) - 0.5
        return np.asarray(1 / (1 + np.exp(np.clip(-4 * noisy, -500.0, 500.0))))

    own = draw()
    members = np.stack([own] + [draw() for _ in range(MEMBERS)])
    spread = solution_spread(members, starts)
    probs = [own[starts[i] : starts[i + 1]] for i in range(len(flat))]
    return probs, [float(x) for x in spread]


# -- training and measuring ----------------------------------------------------------------------


class Trainer:
    """Writes labelled samples as the app's ``trl`` export and trains a ``bow`` PRM on them."""

    def __init__(self, workdir: Path, cache: dict) -> None:
        self.workdir, self.cache, self.trained = workdir, cache, 0

    def __call__(self, rows: Sequence[tuple[Solution, Sequence[bool]]], *, seed: int) -> Any:
        import prm

        self.trained += 1
        out = self.workdir / f"m{self.trained}"
        out.mkdir(parents=True, exist_ok=True)
        path = out / "labels.trl.jsonl"
        write_trl(rows, path)
        prm.train(
            path, out / "model", backbone="bow", seed=seed, progress=False,
            prepare_cache=self.cache,
        )  # fmt: skip
        return prm.load(out / "model")


def write_trl(rows: Sequence[tuple[Solution, Sequence[bool]]], path: Path) -> None:
    """The labelled samples as the app's ``trl`` export writes them under the default policy:
    one row a sample, cut after its first negative step."""
    with path.open("w", encoding="utf-8") as fh:
        for s, labels in rows:
            cut = list(labels).index(False) + 1 if False in labels else len(labels)
            row = {
                "prompt": s.problem,
                "completions": list(s.steps[:cut]),
                "labels": [bool(x) for x in labels[:cut]],
            }
            fh.write(json.dumps(row) + "\n")


def best_of_k(scores: Sequence[float], correct: Sequence[bool], k: int) -> float:
    """Expected accuracy of picking the highest-scored of ``k`` samples drawn at random from one
    problem's pool (all of them when ``k`` is at least its size), exactly: the ``j``-th best
    (ties to the earlier sample, as ``prm.bestofn``) is picked when it is drawn and none above it
    is, in ``C(m - 1 - j, k - 1)`` of the ``C(m, k)`` subsets."""
    m = len(scores)
    k = min(k, m)
    order = sorted(range(m), key=lambda i: (-scores[i], i))
    total = math.comb(m, k)
    return sum(correct[i] * math.comb(m - 1 - j, k - 1) for j, i in enumerate(order)) / total


class Evaluator:
    """Best-of-K accuracy of a trained PRM on each held-out problem (product of step scores)."""

    def __init__(self, pools: Pools, *, backbone: Any, cache: dict) -> None:
        self.pools = pools
        flat = [s for g in pools.held_out for s in g]
        self.featurised = Featurised(flat, backbone=backbone, cache=cache)
        self.sizes = [len(g) for g in pools.held_out]

    def per_problem(self, scorer: Any) -> np.ndarray:
        from prm.metrics import aggregate

        probs = self.featurised.probs(scorer)
        return self.of_scores([aggregate(list(p), "product") for p in probs])

    def of_scores(self, scores: Sequence[float]) -> np.ndarray:
        out, at = [], 0
        for g, n in zip(self.pools.held_out, self.sizes, strict=True):
            correct = [bool(s.answer_correct) for s in g]
            out.append(best_of_k(scores[at : at + n], correct, self.pools.k))
            at += n
        return np.asarray(out)

    def baselines(self) -> dict[str, float]:
        """Random (expected), majority vote over final answers (ties: the first), oracle."""
        from prm.bestofn import normalise_answer

        rand, vote, oracle = [], [], []
        for g in self.pools.held_out:
            correct = [bool(s.answer_correct) for s in g]
            rand.append(sum(correct) / len(g))
            oracle.append(float(any(correct)))
            answers = [normalise_answer(s.answer) for s in g]
            counts: dict[str | None, int] = {}
            for a in answers:
                counts[a] = counts.get(a, 0) + 1
            top = max(counts, key=lambda a: (counts[a], -answers.index(a)))
            vote.append(float(correct[answers.index(top)]))
        return {
            "random": float(np.mean(rand)),
            "majority (all samples)": float(np.mean(vote)),
            "oracle (all samples)": float(np.mean(oracle)),
        }


# -- choosing N per problem ----------------------------------------------------------------------


def problem_orders(
    pools: Pools, selection: Selection, strategy: str, *, seed: int
) -> list[list[int]]:
    """For each training problem, its samples (indexes into ``pools.flat``) in the order the
    app's ``strategy`` puts them, applied to that problem's pool alone: ``convincing-wrong`` is
    then the paper's per-problem 80/20 rule, and the first N of each order are the N chosen."""
    from learning.ordering import Scored
    from learning.strategies import strategy_order
    from prm.metrics import solution_score, step_entropy

    starts = pools.starts()
    flat = pools.flat
    out = []
    for p in range(len(pools.train)):
        items = [
            Scored(
                i,
                solution_score(list(selection.probs[i])),
                flat[i].answer_correct,
                uncertainty=step_entropy(list(selection.probs[i])),
                disagreement=None if selection.disagreement is None else selection.disagreement[i],
                machine_conflict=selection.conflict[i] if selection.conflict else None,
            )
            for i in range(starts[p], starts[p + 1])
        ]
        order = strategy_order(strategy, items, wrong_share=WRONG_SHARE, seed=seed * 100_003 + p)
        out.append([s.solution_id for s in order])
    return out


def chosen(orders: list[list[int]], n: int) -> list[int]:
    return [i for order in orders for i in order[:n]]


def composition(pools: Pools, picked: Sequence[int]) -> dict[str, float]:
    """What a selection holds: wrong-answer share, step labels, and (the world) error kinds."""
    flat = pools.flat
    out = {
        "wrong": sum(flat[i].answer_correct is False for i in picked) / len(picked),
        "steps": float(sum(len(flat[i].steps) for i in picked)),
    }
    if pools.kinds is not None:
        kinds = [k for pool in pools.kinds for k in pool]
        for kind in ERROR_KINDS:
            out[kind] = sum(kinds[i] == kind for i in picked) / len(picked)
    return out


# -- one harness -----------------------------------------------------------------------------------


@dataclass
class Curves:
    """Best-of-K accuracy per (selector, strategy): an array (seeds, N values, held-out problems),
    and what each selection held."""

    ns: list[int]
    seeds: list[int]
    acc: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    held: dict[tuple[str, str], list[dict[str, float]]] = field(default_factory=dict)
    aurocs: dict[str, list[float]] = field(default_factory=dict)
    trained: int = 0


@dataclass
class Options:
    ns: list[int]
    seeds: list[int]
    strategies: list[str]
    noise: float
    rollouts: int = 8
    rollout_sound: tuple[float, float] = (0.3, 0.9)
    rollout_broken: float = 0.1
    judge_hit: float = 0.6


class Harness:
    """One pool's ablation: featurises it once, then for each seed and selector trains the
    students of every strategy at every N."""

    def __init__(
        self,
        pools: Pools,
        options: Options,
        workdir: Path,
        *,
        labeller: Callable[[int], list[tuple[bool, ...]]],
    ) -> None:
        from prm.backbones import build_backbone

        self.pools, self.options, self.labeller = pools, options, labeller
        self.cache: dict = {}
        backbone = build_backbone("bow")
        started = Clock()
        self.train = Featurised(pools.flat, backbone=backbone, cache=self.cache)
        self.evaluator = Evaluator(pools, backbone=backbone, cache=self.cache)
        self.prepared_s = started.seconds()
        self.trainer = Trainer(workdir, self.cache)
        self.curves = Curves(list(options.ns), list(options.seeds))
        self._labels: dict[int, list[tuple[bool, ...]]] = {}
        self._evidence: dict[int, list[dict[int, list[float]]]] = {}

    def labels(self, seed: int) -> list[tuple[bool, ...]]:
        if seed not in self._labels:
            self._labels[seed] = self.labeller(seed)
        return self._labels[seed]

    def evidence(self, seed: int) -> list[dict[int, list[float]]]:
        """The other machines' word on every step (simulated from the truth once per seed)."""
        from bench.active_learning import simulate_evidence

        o = self.options
        if seed not in self._evidence:
            self._evidence[seed] = simulate_evidence(
                self.pools.flat, seed=seed, k=o.rollouts, sound=o.rollout_sound,
                broken=o.rollout_broken, judge_hit=o.judge_hit,
            )  # fmt: skip
        return self._evidence[seed]

    def rows(self, picked: Sequence[int], seed: int) -> list[tuple[Solution, tuple[bool, ...]]]:
        labels, flat = self.labels(seed), self.pools.flat
        return [(flat[i], labels[i]) for i in picked]

    def one_per_problem(self, seed: int) -> list[int]:
        """The selector's training set: one sample of each training problem, drawn uniformly."""
        rng = random.Random(seed * 31 + 7)
        starts = self.pools.starts()
        return [rng.randrange(starts[p], starts[p + 1]) for p in range(len(self.pools.train))]

    def trained_selector(self, seed: int) -> Selection:
        """The paper's selector: a ``bow`` PRM on one labelled sample per problem, with
        ``MEMBERS`` more on bootstrap resamples of those (by problem) for ``ensemble``."""
        from prm.metrics import solution_spread

        picked = self.one_per_problem(seed)
        scorer = self.trainer(self.rows(picked, seed), seed=seed)
        probs = self.train.probs(scorer)
        rng = random.Random(seed * 17 + 5)
        members = [np.concatenate(probs)]
        if "ensemble" in self.options.strategies:
            for m in range(MEMBERS):
                resample = [picked[rng.randrange(len(picked))] for _ in picked]
                member = self.trainer(self.rows(resample, seed), seed=seed * 10 + m + 1)
                members.append(np.concatenate(self.train.probs(member)))
        starts = np.concatenate([[0], np.cumsum([len(p) for p in probs])])
        spread = solution_spread(np.stack(members), starts) if len(members) > 1 else None
        return self.selection("bow selector", probs, seed, spread)

    def selection(
        self, name: str, probs: list[np.ndarray], seed: int, spread: Any = None
    ) -> Selection:
        from learning.machine_evidence import machine_conflict

        conflict: list[float | None] = []
        if "machines-disagree" in self.options.strategies:
            words = self.evidence(seed)
            conflict = [machine_conflict(list(p), w) for p, w in zip(probs, words, strict=True)]
        return Selection(
            name,
            probs,
            None if spread is None else [float(x) for x in spread],
            conflict,
            solution_auroc(self.pools, probs),
        )

    def uniform(self, seed: int) -> None:
        """Uniform's curve: N samples per problem drawn uniformly (nested across N)."""
        blank = Selection("uniform", [np.ones(len(s.steps)) for s in self.pools.flat])
        self.run(blank, [UNIFORM], seed, key=UNIFORM)

    def run(self, selection: Selection, strategies: Sequence[str], seed: int, *, key: str) -> None:
        """Train and measure every strategy at every N under ``selection``."""
        c = self.curves
        if selection.name != UNIFORM:
            c.aurocs.setdefault(selection.name, []).append(selection.auroc)
        for strategy in strategies:
            orders = problem_orders(self.pools, selection, strategy, seed=seed)
            per_n, held = [], []
            for n in self.options.ns:
                picked = chosen(orders, n)
                scorer = self.trainer(self.rows(picked, seed), seed=seed)
                per_n.append(self.evaluator.per_problem(scorer))
                held.append(composition(self.pools, picked))
            name = (key or selection.name, strategy)
            stacked = np.stack(per_n)[None]
            c.acc[name] = stacked if name not in c.acc else np.concatenate([c.acc[name], stacked])
            c.held.setdefault(name, []).extend(held)
        c.trained = self.trainer.trained


# -- slopes ------------------------------------------------------------------------------------


def slopes(acc: np.ndarray, ns: Sequence[int]) -> np.ndarray:
    """Least-squares slope of mean accuracy against log2(N): ``acc`` is (..., N values)."""
    x = np.log2(np.asarray(ns, dtype=float))
    x = x - x.mean()
    return np.asarray((acc - acc.mean(axis=-1, keepdims=True)) @ x / (x @ x))


@dataclass
class Ratio:
    point: float
    low: float
    high: float
    slope: float
    uniform_slope: float
    unbounded: float  # share of resamples where uniform's slope was not positive

    def cell(self) -> str:
        if not math.isfinite(self.point):
            return "n/a (uniform's slope is not positive)"
        if self.unbounded > 0.025:
            interval = f"unbounded: uniform's slope <= 0 in {self.unbounded:.0%} of resamples"
        else:
            interval = f"{self.low:.2f}-{self.high:.2f}"
        star = "**" if self.unbounded <= 0.025 and self.low > 1 else ""
        return f"{star}{self.point:.2f}x{star} ({interval})"


def slope_ratio(
    acc: np.ndarray, uniform: np.ndarray, ns: Sequence[int], *, boot: int = BOOT, seed: int = 0
) -> Ratio:
    """The ratio of the strategy's slope to uniform's, with a 95% bootstrap interval: seeds and
    held-out problems resampled with replacement, both arrays (seeds, N, problems) together."""
    s_pt = float(slopes(acc.mean(axis=(0, 2)), ns))
    u_pt = float(slopes(uniform.mean(axis=(0, 2)), ns))
    point = s_pt / u_pt if u_pt > 0 else math.nan
    rng = np.random.default_rng(seed)
    n_seeds, _, n_problems = acc.shape
    values, bad = [], 0
    for _ in range(boot):
        si = rng.integers(0, n_seeds, n_seeds)
        pi = rng.integers(0, n_problems, n_problems)
        s = float(slopes(acc[si][:, :, pi].mean(axis=(0, 2)), ns))
        u = float(slopes(uniform[si][:, :, pi].mean(axis=(0, 2)), ns))
        if u <= 0:
            bad += 1
            continue
        values.append(s / u)
    low, high = np.percentile(values, [2.5, 97.5]).tolist() if values else (math.nan, math.nan)
    return Ratio(point, low, high, s_pt, u_pt, bad / boot)


# -- reporting -------------------------------------------------------------------------------------


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


@dataclass(frozen=True)
class Clock:
    """Wall and CPU time since it was made: on a shared machine the wall time says more about
    the neighbours than about the benchmark, so both are printed (with the load)."""

    wall: float = field(default_factory=time.perf_counter)
    cpu: float = field(default_factory=time.process_time)

    def seconds(self) -> float:
        return time.perf_counter() - self.wall

    def minutes(self) -> str:
        cpu = (time.process_time() - self.cpu) / 60
        return f"{self.seconds() / 60:.1f} minutes ({cpu:.1f} CPU minutes)"


def report(h: Harness, title: str, selectors: Sequence[str], started: Clock) -> dict[str, Any]:
    """Print one harness's tables; return its figures (for ``--json`` and the map)."""
    from bench.active_learning import budget_to_match

    c, p, o = h.curves, h.pools, h.options
    uniform = c.acc[(UNIFORM, UNIFORM)]
    print(f"\n## {title}\n")
    pool_sizes = sorted({len(x) for x in p.train})
    print(
        f"{len(p.train)} training problems, pools of "
        + (f"{pool_sizes[0]}" if len(pool_sizes) == 1 else f"{pool_sizes[0]}-{pool_sizes[-1]}")
        + f" samples ({len(p.flat):,} in all, {sum(s.answer_correct is False for s in p.flat):,}"
        f" with a wrong final answer); held out: {len(p.held_out)} problems, "
        f"{sum(map(len, p.held_out)):,} samples, best-of-{p.k}; N per problem {c.ns}; seeds "
        f"{c.seeds}; labeller noise {o.noise:.0%}" + (f"; {p.note}" if p.note else "")
    )
    base = h.evaluator.baselines()
    print(
        "held-out baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in base.items())
        + f"; {c.trained} PRMs trained; prepared in {h.prepared_s:.0f} s"
    )  # fmt: skip
    for name in selectors:
        aurocs = c.aurocs.get(name, [])
        if aurocs:
            print(
                f"{name}: AUROC at finding the samples with an error "
                f"{statistics.mean(aurocs):.3f} (seeds: {', '.join(f'{a:.3f}' for a in aurocs)})"
            )
    figures: dict[str, Any] = {"title": title, "ns": c.ns, "seeds": c.seeds, "ratios": {}}
    print(
        f"\nbest-of-{p.k} accuracy on the held-out problems (mean over seeds ± sd), the slope "
        "against log2(N) and the slope ratio over uniform (95% bootstrap interval over problems "
        "and seeds; bold: above 1)\n"
    )
    print("| selector | strategy | " + " | ".join(f"N={n}" for n in c.ns) + " | slope | ratio |")
    print("| --- | --- |" + " ---: |" * (len(c.ns) + 2))
    u_cells = [
        f"{uniform[:, j].mean():.3f} ± {np.std(uniform[:, j].mean(axis=1)):.3f}"
        for j in range(len(c.ns))
    ]
    u_slope = float(slopes(uniform.mean(axis=(0, 2)), c.ns))
    print(f"| | uniform | {' | '.join(u_cells)} | {u_slope:+.4f} | 1 |")
    for name in selectors:
        for strategy in o.strategies:
            acc = c.acc.get((name, strategy))
            if acc is None:
                continue
            r = slope_ratio(acc, uniform, c.ns)
            figures["ratios"][f"{name}/{strategy}"] = r.__dict__
            cells = [
                f"{acc[:, j].mean():.3f} ± {np.std(acc[:, j].mean(axis=1)):.3f}"
                for j in range(len(c.ns))
            ]
            print(f"| {name} | {strategy} | {' | '.join(cells)} | {r.slope:+.4f} | {r.cell()} |")
    print(
        "\nlabels to match: the N per problem at which uniform reaches the strategy's mean "
        "accuracy at N (interpolated on log2(N) along uniform's mean curve), over N; `<=` and `>`: "
        "outside uniform's curve (a bound, not a measurement)\n"
    )
    print("| selector | strategy | " + " | ".join(f"N={n}" for n in c.ns) + " |")
    print("| --- | --- |" + " ---: |" * len(c.ns))
    u_curve = {n: float(uniform[:, j].mean()) for j, n in enumerate(c.ns)}
    for name in selectors:
        for strategy in o.strategies:
            acc = c.acc.get((name, strategy))
            if acc is None:
                continue
            cells = []
            for j, n in enumerate(c.ns):
                mark, need = budget_to_match(float(acc[:, j].mean()), u_curve)
                cells.append(f"{mark}{need / n:.2f}x")
            figures["ratios"][f"{name}/{strategy}"]["to_match"] = cells
            print(f"| {name} | {strategy} | " + " | ".join(cells) + " |")
    print("\nwhat each selection holds at each N: wrong-answer share / step labels (mean of seeds)")
    kinds = p.kinds is not None
    if kinds:
        print("/ share of samples whose first error is a wrong method, copied number, slip")
    print("\n| selector | strategy | " + " | ".join(f"N={n}" for n in c.ns) + " |")
    print("| --- | --- |" + " ---: |" * len(c.ns))
    for (name, strategy), held in c.held.items():
        cells = []
        for j in range(len(c.ns)):
            rows = held[j :: len(c.ns)]
            cell = (
                f"{statistics.mean(r['wrong'] for r in rows):.0%} / "
                f"{statistics.mean(r['steps'] for r in rows):,.0f}"
            )
            if kinds:
                cell += " / " + ", ".join(
                    f"{statistics.mean(r[k] for r in rows):.0%}" for k in ERROR_KINDS
                )
            cells.append(cell)
        print(f"| {name} | {strategy} | " + " | ".join(cells) + " |")
    print(f"\n{title}: {started.minutes()}; load {_load()}", flush=True)
    figures["minutes"] = started.seconds() / 60
    return figures


# -- the three harnesses and the map -------------------------------------------------------------


# The worlds of the default command: (title, error mix, with the long tail of topics)
WORLDS = {
    "world": ("The world that keeps the paper's assumptions", MIX, False),
    "copied": ("The world with copied wrong numbers (which bow cannot see)", COPIED_MIX, False),
    "tail": ("The world with a long tail of topics (defined operations)", MIX, True),
}


def make_world(args: argparse.Namespace, variant: str = "world") -> World:
    _, mix, tail = WORLDS[variant]
    if variant == "world" and args.mix is not None:
        mix = tuple(args.mix)
    return world(
        train_problems=args.problems, held_out_problems=args.held_out, pool=args.pool,
        seed=args.world_seed, mix=mix, tail=tail,
    )  # fmt: skip


def describe_world(w: World, pools: Pools) -> None:
    """How the world looks to the built-in features: error kinds and how often the exact checks
    fire on each (a sample of 300 training solutions)."""
    import prm

    flat = [s for pool in w.train for s in pool]
    right = sum(bool(s.solution.answer_correct) for s in flat) / len(flat)
    kinds = {k: sum(s.kind == k for s in flat) / len(flat) for k in ERROR_KINDS}
    rng = random.Random(0)
    fired: dict[str, list[bool]] = {}
    for s in rng.sample(flat, min(300, len(flat))):
        for i, found in enumerate(prm.check_solution(s.solution.problem, list(s.solution.steps))):
            if s.first_error == -1 or i < s.first_error:
                where = "sound steps"
            elif i == s.first_error:
                where = f"first errors: {s.kind}"
            else:
                where = "steps after the first error"
            fired.setdefault(where, []).append(bool(found))
    print(
        f"world (seed {w.seed}): {right:.0%} of samples reach the right answer; first errors: "
        + ", ".join(f"{k} {v:.0%} of samples" for k, v in kinds.items())
        + f" (mix {'/'.join(f'{x:g}' for x in w.mix)}); exact checks fire on "
        + ", ".join(f"{k} {sum(v) / len(v):.0%} ({len(v)})" for k, v in sorted(fired.items()))
    )


def run_world(
    args: argparse.Namespace, options: Options, workdir: Path, variant: str
) -> dict[str, Any]:
    started = Clock()
    w = make_world(args, variant)
    pools = world_pools(w, k=args.pool // 2)
    describe_world(w, pools)
    h = Harness(
        pools, options, workdir / variant,
        labeller=lambda seed: noisy_labels(pools, noise=options.noise, seed=seed),
    )  # fmt: skip
    for seed in options.seeds:
        h.uniform(seed)
        h.run(h.trained_selector(seed), options.strategies, seed, key="bow selector")
        print(f"{variant}: seed {seed} done at {started.seconds():.0f} s", flush=True)
    return report(h, WORLDS[variant][0], ["bow selector"], started)


def run_phase1(args: argparse.Namespace, options: Options, workdir: Path) -> dict[str, Any]:
    started = Clock()
    pools = phase1_pools(shared_data(), k=4, limit=args.phase1_limit)
    human = [tuple(s.labels or ()) for s in pools.flat]
    o = replace(options, noise=0.0)
    h = Harness(pools, o, workdir / "phase1", labeller=lambda seed: human)
    for seed in o.seeds:
        h.uniform(seed)
        h.run(h.trained_selector(seed), o.strategies, seed, key="bow selector")
        print(f"phase 1: seed {seed} done at {started.seconds():.0f} s", flush=True)
    return report(h, "PRM800K phase 1: real paths, real human ratings", ["bow selector"], started)


def run_served(
    args: argparse.Namespace, options: Options, workdir: Path, url: str, model: str
) -> dict[str, Any]:
    """The world labelled by a served PRM (``/pooling``), which is also a second selector."""
    from machines.endpoints import POOLING, Endpoint
    from machines.served import ServedPRM

    started = Clock()
    w = make_world(args)
    pools = world_pools(w, k=args.pool // 2)
    endpoint = Endpoint(
        name="served", kind=POOLING, base_url=url.rstrip("/"), models=(model,),
        key_env=args.served_key_env or "", timeout_s=300, max_concurrency=8,
    )  # fmt: skip
    with ServedPRM(endpoint, model, concurrency=4, retries=5, backoff_s=1.0) as served:
        train_scores = served.score([(s.problem, s.steps) for s in pools.flat])
        held_flat = [s for g in pools.held_out for s in g]
        held_scores = served.score([(s.problem, s.steps) for s in held_flat])
    labels = [tuple(p >= 0.5 for p in scores) for scores in train_scores]
    agree = statistics.mean(
        float(a == b) for s, lab in zip(pools.flat, labels, strict=True)
        for a, b in zip(s.labels or (), lab, strict=True)
    )  # fmt: skip
    print(f"served PRM {model}: agrees with the truth on {agree:.1%} of the world's steps")
    o = replace(options, noise=math.nan)
    h = Harness(pools, o, workdir / "served", labeller=lambda seed: labels)
    from prm.metrics import solution_score

    own = h.evaluator.of_scores([solution_score(p) for p in held_scores])
    print(f"the served PRM's own best-of-{pools.k} on the held-out problems: {own.mean():.3f}")
    probs = [np.asarray(p, dtype=float) for p in train_scores]
    for seed in o.seeds:
        h.uniform(seed)
        h.run(h.trained_selector(seed), o.strategies, seed, key="bow selector")
        h.run(h.selection("served PRM", probs, seed), o.strategies, seed, key="served PRM")
    return report(
        h, f"The world labelled by the served PRM {model}", ["bow selector", "served PRM"], started
    )


def run_map(args: argparse.Namespace, options: Options, workdir: Path) -> dict[str, Any]:
    """The selector-quality map: planted selectors of several qualities and the trained one."""
    from bench.al_selector_sweep import crossing

    started = Clock()
    w = make_world(args)
    pools = world_pools(w, k=args.pool // 2)
    describe_world(w, pools)
    h = Harness(
        pools, options, workdir / "map",
        labeller=lambda seed: noisy_labels(pools, noise=options.noise, seed=seed),
    )  # fmt: skip
    names = [f"planted sd {s:g}" for s in args.sigmas]
    for seed in options.seeds:
        h.uniform(seed)
        h.run(h.trained_selector(seed), options.strategies, seed, key="bow selector")
        for sigma, name in zip(args.sigmas, names, strict=True):
            probs, spread = planted(pools, sigma=sigma, seed=seed)
            h.run(h.selection(name, probs, seed, spread), options.strategies, seed, key=name)
        print(f"map: seed {seed} done at {started.seconds():.0f} s", flush=True)
    figures = report(h, "The selector-quality map", ["bow selector", *names], started)
    uniform = h.curves.acc[(UNIFORM, UNIFORM)]
    print(
        "\nwhere each strategy's slope ratio crosses 1.0x and 1.5x with the interval above 1 (the "
        "planted selectors, by measured AUROC; the trained bow selector placed among them)\n"
    )
    print(
        "| strategy | crosses 1.0x at AUROC | crosses 1.5x at AUROC | the ratios, by AUROC "
        "| bow selector |"
    )
    print("| --- | ---: | ---: | --- | --- |")
    crossings: dict[str, dict[str, Any]] = {}
    for strategy in options.strategies:
        points = []
        for name in names:
            r = slope_ratio(h.curves.acc[(name, strategy)], uniform, h.curves.ns)
            ok_low = r.low if r.unbounded <= 0.025 else -math.inf
            points.append((statistics.mean(h.curves.aurocs[name]), r.point, ok_low))
        points.sort()
        real = slope_ratio(h.curves.acc[("bow selector", strategy)], uniform, h.curves.ns)
        real_auroc = statistics.mean(h.curves.aurocs["bow selector"])
        crossings[strategy] = {
            "1.0x": crossing(points, 1.0),
            "1.5x": crossing(points, 1.5),
            "points": points,
        }
        listed = "; ".join(f"{a:.3f}: {r:.2f}x" for a, r, _ in points)
        print(
            f"| {strategy} | {crossings[strategy]['1.0x']} | {crossings[strategy]['1.5x']} | "
            f"{listed} | AUROC {real_auroc:.3f}: {real.cell()} |"
        )
    figures["crossings"] = crossings
    print("\n" + manager_sentence(crossings.get("convincing-wrong")), flush=True)
    return figures


def manager_sentence(cw: dict[str, Any] | None) -> str:
    """The map in one sentence, for convincing-wrong (PRM800K's rule)."""
    if cw is None:
        return "(convincing-wrong was not run)"
    points = cw["points"]
    for level in ("1.5x", "1.0x"):
        at = cw[level]
        if at != "not reached":
            x = float(at.removeprefix("<= "))
            above = [r for a, r, _ in points if a >= x]
            return (
                f"With a selector above AUROC {x:.2f}, PRM800K's rule buys about "
                f"{statistics.mean(above):.1f} times the labels (slope ratio over uniform "
                f"{min(above):.2f}-{max(above):.2f}x at AUROC {x:.2f}-{points[-1][0]:.2f} in this "
                "world)."
            )
    ratios = [r for _, r, _ in points]
    return (
        f"With a selector of AUROC {points[0][0]:.2f} to {points[-1][0]:.2f}, PRM800K's rule "
        f"bought about {statistics.mean(ratios):.1f} times the labels by the paper's measure "
        f"(slope ratio over uniform {min(ratios):.2f}-{max(ratios):.2f}x, no interval wholly "
        "above 1 from any AUROC on): no reliable gain over ordering uniformly in this world."
    )


# -- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--map", action="store_true", help="the selector-quality map")
    parser.add_argument("--quick", action="store_true", help="a smaller world: a few minutes")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--ns", type=int, nargs="+", default=[2, 4, 8, 16], help="N per problem (2 4 8 16)"
    )
    parser.add_argument("--problems", type=int, default=400, help="training problems (world)")
    parser.add_argument("--held-out", type=int, default=200, help="held-out problems (world)")
    parser.add_argument("--pool", type=int, default=64, help="samples per problem (world)")
    parser.add_argument("--world-seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.05, help="labeller's step-label flips")
    parser.add_argument(
        "--mix", type=float, nargs=3, help=f"the main world's mix of error kinds ({MIX})"
    )
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    parser.add_argument("--sigmas", type=float, nargs="+", default=list(SIGMAS))
    parser.add_argument(
        "--pools", nargs="+", choices=[*WORLDS, "phase1"],
        help="which pools to run (default: all of them; with --served, none besides it)",
    )  # fmt: skip
    parser.add_argument("--phase1-limit", type=int, default=None, help="fewer phase 1 problems")
    parser.add_argument(
        "--served", nargs=2, metavar=("URL", "MODEL"),
        help="a PRM served on vLLM's /pooling API: it labels the world and selects",
    )  # fmt: skip
    parser.add_argument("--served-key-env", help="the environment variable holding its key")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    if args.quick:
        args.problems, args.held_out = min(args.problems, 80), min(args.held_out, 40)
        args.sigmas = args.sigmas[::2]
        args.phase1_limit = args.phase1_limit or 200
    if args.pools is None:
        args.pools = [] if args.served else [*WORLDS, "phase1"]
    served = args.served or (
        (os.environ["STEPWISE_ABLATION_SERVED_URL"], os.environ["STEPWISE_ABLATION_SERVED_MODEL"])
        if os.environ.get("STEPWISE_ABLATION_SERVED_URL")
        else None
    )

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    import django

    django.setup()  # learning.strategies: the app's own selection rules
    import torch

    torch.set_num_threads(1)
    options = Options(ns=sorted(args.ns), seeds=args.seeds, strategies=args.strategies,
                      noise=args.noise)  # fmt: skip
    started = Clock()
    print(
        f"PRM800K's ablation ({'map' if args.map else 'slopes'}): seeds {args.seeds}, N "
        f"{options.ns}; {os.cpu_count()} CPUs, load {_load()}",
        flush=True,
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="stepwise-prm800k-ablation-") as tmp:
        work = Path(tmp)
        if args.map:
            results.append(run_map(args, options, work))
        else:
            if served:
                results.append(run_served(args, options, work, *served))
            for variant in WORLDS:
                if variant in args.pools:
                    results.append(run_world(args, options, work, variant))
            if "phase1" in args.pools:
                results.append(run_phase1(args, options, work))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    print(f"\ntotal {started.minutes()}; load {_load()}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()

"""The harness of PRM800K's ablation (``bench/prm800k_ablation.py``): per-problem pools, the
labeller and the selectors, training students on N labelled samples per problem, best-of-K on
held-out problems, the strategies' choices per problem and the slopes of accuracy against
log2(N) with their ratios over uniform."""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.prm800k_world import ERROR_KINDS, World
from bench.prm_common import require
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


# -- time ------------------------------------------------------------------------------------------


def load_text() -> str:
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

"""Selector-quality sweep: where each strategy starts to pay, as a function of the selector's AUROC.

A simulated campaign: the pool is every labelled path of PRM800K phase 1 (``../shared/data``, as
``bench/active_learning.py`` reads it; 28,722 paths of 888 problems, graded answers), simulated
annotators replay the paths' real ratings. The selector is planted with a controlled quality: a
teacher that knows whether a path holds a negative step (``t = 1`` for a clean path, 0 with an
error) plus Gaussian noise of sd ``sigma``, its score ``t + noise`` the PRM score the strategies
order by; ``uncertainty`` is closeness of that score to 0.5 and the ensemble's disagreement the sd
of ``ENSEMBLE`` members' probabilities (each the teacher plus its own noise, squashed by a
logistic). Each level's AUROC at finding the paths with an error is measured, not assumed.

Each strategy orders the pool with the run's own code (``strategy_order`` and ``with_control``, a
``--share`` control arm), the annotators label the first ``--labelled`` solutions, and the
efficiency is ``learning.efficiency.error_yield``: the strategy's share of labelled solutions with
an error found over the control's, with its 95% bootstrap interval. It measures the errors a
strategy surfaces per label, not a PRM trained on them (the AUROC ratio is too wide to resolve at
these sizes: docs/active-learning.md).

    python -m bench.al_selector_sweep                 # about 1-2 minutes on the 2-core machine
    python -m bench.al_selector_sweep --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")

SIGMAS = (0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0)
STRATEGIES = ("convincing-wrong", "uncertainty", "ensemble")
ENSEMBLE = 5


def planted(rows, *, sigma: float, seed: int):
    """The pool as ``Scored`` under a selector of noise ``sigma``, and its AUROC."""
    from sklearn.metrics import roc_auc_score

    from learning.ordering import Scored

    rng = random.Random(seed)
    pool, error, suspicion = [], [], []
    for k, row in enumerate(rows):
        t = 1.0 if all(row.labels) else 0.0
        score = t + rng.gauss(0, sigma)
        members = [
            1 / (1 + math.exp(-4 * (t + rng.gauss(0, sigma) - 0.5))) for _ in range(ENSEMBLE)
        ]
        pool.append(
            Scored(
                solution_id=k,
                score=score,
                answer_is_correct=row.answer_correct,
                uncertainty=-abs(score - 0.5),
                disagreement=statistics.pstdev(members),
            )
        )
        error.append(t == 0.0)
        suspicion.append(-score)
    return pool, float(roc_auc_score(error, suspicion))


def crossing(points: list[tuple[float, float, float]], level: float) -> str:
    """The lowest AUROC from which on every measured point has ratio >= ``level`` and its
    interval's low end above 1, interpolated linearly on the ratio between the two levels around
    it; ``points`` are (AUROC, ratio, low end) in increasing AUROC."""
    ok = [r >= level and lo > 1 for _, r, lo in points]
    if not ok[-1]:
        return "not reached"
    k = len(ok) - 1
    while k > 0 and ok[k - 1]:
        k -= 1
    if k == 0:
        return f"<= {points[0][0]:.3f}"
    (a0, r0, _), (a1, r1, _) = points[k - 1], points[k]
    t = 0.0 if r1 == r0 else min(1.0, max(0.0, (level - r0) / (r1 - r0)))
    return f"{a0 + t * (a1 - a0):.3f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labelled", type=int, default=2000, help="solutions labelled per run")
    parser.add_argument("--share", type=float, default=0.2, help="the control arm's share")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)

    import django

    django.setup()
    from bench.active_learning import TRAJECTORIES, default_data, phase1_rows
    from learning.efficiency import ArmLabels, error_yield
    from learning.placing import with_control
    from learning.strategies import strategy_order

    t0 = time.perf_counter()
    rows, source = phase1_rows(default_data() / TRAJECTORIES)
    base = sum(1 for r in rows if not all(r.labels)) / len(rows)
    print(
        f"pool: {len(rows):,} paths of {len({r.problem for r in rows}):,} problems ({source}), "
        f"{base:.0%} with an error; labelled {args.labelled:,} per run, control share "
        f"{args.share:.0%}; seeds {args.seeds}; {args.resamples} bootstrap resamples; "
        f"load {os.getloadavg()}"
    )
    table: dict[str, list[tuple[float, float, float, float]]] = {s: [] for s in STRATEGIES}
    print("| sigma | selector AUROC | " + " | ".join(STRATEGIES) + " |")
    print("| ---: | ---: |" + " ---: |" * len(STRATEGIES))
    for sigma in SIGMAS:
        cells, aurocs = [], []
        per: dict[str, list[dict]] = {s: [] for s in STRATEGIES}
        for seed in args.seeds:
            pool, auroc = planted(rows, sigma=sigma, seed=seed)
            aurocs.append(auroc)
            for name in STRATEGIES:
                queue, arms = with_control(
                    strategy_order(name, pool, seed=seed),
                    strategy=name,
                    share=args.share,
                    seed=seed,
                )
                labelled = [
                    ArmLabels(
                        rows[s.solution_id].problem,
                        tuple(rows[s.solution_id].steps),
                        tuple(map(bool, rows[s.solution_id].labels)),
                        arm,
                    )
                    for s, arm in zip(queue[: args.labelled], arms[: args.labelled], strict=True)
                ]
                per[name].append(error_yield(labelled, resamples=args.resamples, seed=seed))
        auroc = statistics.mean(aurocs)
        for name in STRATEGIES:
            ratio = statistics.mean(r["ratio"] for r in per[name])
            lo = statistics.mean(r["ratio_ci95"][0] for r in per[name])
            hi = statistics.mean(r["ratio_ci95"][1] or math.inf for r in per[name])
            table[name].append((auroc, ratio, lo, hi))
            cells.append(
                f"{'**' if lo > 1 else ''}{ratio:.2f}x{'**' if lo > 1 else ''} ({lo:.2f}-{hi:.2f})"
            )
        print(f"| {sigma:g} | {auroc:.3f} | " + " | ".join(cells) + " |", flush=True)
    print()
    print("| strategy | crosses 1.0x (interval above 1) at AUROC | crosses 1.5x at AUROC |")
    print("| --- | ---: | ---: |")
    for name in STRATEGIES:
        points = sorted((a, r, lo) for a, r, lo, _ in table[name])
        print(f"| {name} | {crossing(points, 1.0)} | {crossing(points, 1.5)} |")
    minutes = (time.perf_counter() - t0) / 60
    print(f"\n{minutes:.1f} minutes in one process; load {os.getloadavg()}")


if __name__ == "__main__":
    main()

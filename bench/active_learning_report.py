"""What ``bench/active_learning.py`` measures and reports: its measures, the labels a strategy
needs to match uniform and their ratios with bootstrap intervals, the tables for one pool, and the
merge of several runs' JSON into one report."""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
from pathlib import Path

import numpy as np

MEASURES = ("auroc", "fe_f1", "bon")
MEASURE_NAMES = {
    "auroc": "held-out step AUROC",
    "fe_f1": "first-error F1",
    "bon": "best-of-N accuracy",
}


def budget_to_match(target: float, uniform: dict[int, float]) -> tuple[str, float]:
    """The budget at which uniform's curve first reaches ``target``, interpolated on log(budget)
    from the budget below it: ``("", b)``; ``("<=", smallest)`` when uniform's smallest budget
    already reaches it; ``(">", largest)`` when no budget does."""
    points = sorted(uniform.items())
    for k, (b1, a1) in enumerate(points):
        if a1 >= target:
            if k == 0:
                return "<=", float(b1)
            b0, a0 = points[k - 1]
            t = (target - a0) / (a1 - a0)
            return "", math.exp(math.log(b0) + t * (math.log(b1) - math.log(b0)))
    return ">", float(points[-1][0])


def ratios(uniform_runs, strategy_runs, measure_name, budget, *, steps=False, boot=1000, seed=0):
    """(mark, ratio, low, high): the data-efficiency ratio at ``budget`` from the mean curves of
    the seeds, and its 95% bootstrap interval over seeds (resampled in pairs). With ``steps`` the
    labels are counted in steps, not solutions: uniform's curve is read against the mean number of
    step labels it held, and the ratio divides by the step labels the strategy held."""
    n = len(uniform_runs)
    budgets_u = sorted(uniform_runs[0])

    def x(runs, idx, b):
        return statistics.mean(runs[i][b]["steps"] for i in idx) if steps else b

    def ratio(idx):
        curve = {
            x(uniform_runs, idx, b): statistics.mean(uniform_runs[i][b][measure_name] for i in idx)
            for b in budgets_u
        }
        target = statistics.mean(strategy_runs[i][budget][measure_name] for i in idx)
        mark, need = budget_to_match(target, curve)
        return mark, need / x(strategy_runs, idx, budget)

    mark, point = ratio(range(n))
    rng = random.Random(seed)
    values = [ratio([rng.randrange(n) for _ in range(n)])[1] for _ in range(boot)] if n > 1 else []
    low, high = np.percentile(values, [2.5, 97.5]).tolist() if values else (point, point)
    return mark, point, low, high


def _mean(values):
    return statistics.mean(values)


def _sd(values):
    return statistics.stdev(values) if len(values) > 1 else 0.0


def report(uniform_runs, runs, uniform_budgets, budgets, args, *, skipped) -> None:
    """Print the tables for one pool: every measure with its ratios, ratios in step labels, what
    the selections hold, and which strategies reach 1.5x with their interval above 1."""
    names = list(runs)
    if skipped:
        print(f"not run: {', '.join(skipped)} (no verifier score in this pool)")
    best: list[tuple] = []
    for m in MEASURES:
        print(
            f"\n{MEASURE_NAMES[m]} (mean of {len(uniform_runs)} seeds ± sd) and the "
            "data-efficiency ratio against uniform, counting solutions (95% bootstrap interval "
            "over seeds; bold: interval above 1)\n"
        )
        print("| budget | uniform | " + " | ".join(names) + " |")
        print("| ---: | ---: | " + " | ".join("---:" for _ in names) + " |")
        for b in uniform_budgets:
            u = [r[b][m] for r in uniform_runs]
            cells = []
            for name in names:
                if b not in budgets:
                    cells.append("")
                    continue
                values = [r[b][m] for r in runs[name]]
                if b == budgets[-1]:
                    cells.append(f"{_mean(values):.3f} (the whole pool)")
                    continue
                mark, point, low, high = ratios(uniform_runs, runs[name], m, b)
                star = "**" if low > 1.0 else ""
                best.append((point, low, high, name, m, b, "solutions", mark))
                cells.append(
                    f"{_mean(values):.3f} ± {_sd(values):.3f}: {star}{mark}{point:.2f}x{star} "
                    f"({low:.2f}-{high:.2f})"
                )
            print(f"| {b:,} | {_mean(u):.3f} ± {_sd(u):.3f} | " + " | ".join(cells) + " |")
    print(
        "\nthe same ratios counting step labels (uniform's step labels to match / the strategy's "
        "step labels; 95% interval)\n"
    )
    print("| measure | budget | " + " | ".join(names) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in names) + " |")
    for m in MEASURES:
        for b in budgets[:-1]:
            cells = []
            for name in names:
                mark, point, low, high = ratios(uniform_runs, runs[name], m, b, steps=True)
                star = "**" if low > 1.0 else ""
                best.append((point, low, high, name, m, b, "step labels", mark))
                cells.append(f"{star}{mark}{point:.2f}x{star} ({low:.2f}-{high:.2f})")
            print(f"| {MEASURE_NAMES[m]} | {b:,} | " + " | ".join(cells) + " |")
    print("\nwhat each selection holds: wrong-answer share / step labels (mean over seeds)\n")
    print("| budget | uniform | " + " | ".join(names) + " |")
    print("| ---: | ---: | " + " | ".join("---:" for _ in names) + " |")
    for b in uniform_budgets:
        cells = [
            f"{_mean([r[b]['wrong'] for r in rs]):.0%} / {_mean([r[b]['steps'] for r in rs]):,.0f}"
            if b in rs[0]
            else ""
            for rs in [uniform_runs, *runs.values()]
        ]
        print(f"| {b:,} | " + " | ".join(cells) + " |")
    # Censored ratios ("<=", ">": outside uniform's curve) are bounds, not measurements.
    hits = sorted((h for h in best if h[7] == "" and h[1] > 1.0 and h[0] >= 1.5), reverse=True)
    print(
        "\n1.5x or more with the interval above 1 (interpolated ratios only): "
        + (
            "; ".join(
                f"{name} {MEASURE_NAMES[m]} at {b:,} ({unit}): {p:.2f}x ({lo:.2f}-{hi:.2f})"
                for p, lo, hi, name, m, b, unit, _ in hits
            )
            or "none"
        )
    )


def merge(paths: list[Path], args) -> None:
    """The report of several ``--json`` files: the seeds of each pool put together."""

    def ints(runs):  # JSON keys are strings
        return [{int(b): v for b, v in r.items()} for r in runs]

    pools: dict[str, dict] = {}
    for path in paths:
        for part in json.loads(path.read_text()):
            pool = pools.setdefault(
                part["source"],
                {
                    "budgets": part["budgets"],
                    "uniform_budgets": part["uniform_budgets"],
                    "uniform": [],
                    "strategies": {name: [] for name in part["strategies"]},
                    "skipped": part["skipped"],
                    "seeds": [],
                },
            )
            if part["budgets"] != pool["budgets"] or set(part["strategies"]) != set(
                pool["strategies"]
            ):
                sys.exit(f"{path}: other budgets or strategies than the first file of its pool")
            pool["uniform"] += ints(part["uniform"])
            pool["seeds"] += part.get("seeds", [])
            for name, runs in part["strategies"].items():
                pool["strategies"][name] += ints(runs)
    for source, pool in pools.items():
        print(f"\n## {source} (seeds {', '.join(map(str, pool['seeds']))})")
        report(
            pool["uniform"],
            pool["strategies"],
            pool["uniform_budgets"],
            pool["budgets"],
            args,
            skipped=pool["skipped"],
        )

"""How often each check of ``prm.checks`` fires: on PRM800K phase 1 steps, with the share of
them that labelers rated non-negative, and on correct reference solutions (false alarms).

    STEPWISE_SHARED_DATA=../shared/data python -m bench.prm_checks_rates [--rows 3000]

PRM800K rows come from ``bench/out/phase1_trl.jsonl`` (``python -m bench.prm_make_trl``), a seeded
sample of ``--rows``, each unique step counted once; the reference solutions are the first
``--solutions`` of the corruption suite's seeded pool (``bench.prm_corruption_suite``).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from bench.prm_common import ROOT, require, shared_data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--solutions", type=int, default=800)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from bench.prm_corruption_suite import solutions
    from prm.checks import CHECKS, SolutionChecks, check_solution
    from prm.data import read_dataset

    export = require(ROOT / "bench" / "out" / "phase1_trl.jsonl")
    rows = [s for s in read_dataset(export).solutions if s.labels is not None]
    random.Random(args.seed).shuffle(rows)
    rows = rows[: args.rows]
    seen: set = set()
    fired, positive = Counter(), Counter()
    unique = unique_positive = checked = 0
    started = time.process_time()
    for row in rows:
        context = SolutionChecks(row.problem)
        for i, step in enumerate(row.steps):
            findings = context.step(step)
            checked += 1
            key = (row.problem, row.steps[: i + 1])
            if key in seen:
                continue
            seen.add(key)
            unique += 1
            unique_positive += row.labels[i]
            for f in findings:
                fired[f.check] += 1
                positive[f.check] += row.labels[i]
    seconds = time.process_time() - started
    print(
        f"PRM800K phase 1: {len(rows)} rows, {unique} unique steps "
        f"({unique_positive / unique:.1%} non-negative); {checked} steps checked in "
        f"{seconds:.1f} CPU s ({checked / seconds:,.0f}/s, repeated prefixes cached)"
    )
    print("| check | fires on | of those, rated non-negative |\n| --- | --- | --- |")
    for name in CHECKS:
        if fired[name]:
            share = positive[name] / fired[name]
            print(f"| {name} | {fired[name]} ({fired[name] / unique:.2%}) | {share:.0%} |")

    pool = list(solutions(require(shared_data())))
    random.Random(args.seed).shuffle(pool)
    false_alarms, steps, by_source = Counter(), 0, Counter()
    for source, problem, solution in pool[: args.solutions]:
        for findings in check_solution(problem, solution):
            steps += 1
            by_source[source] += bool(findings)
            for f in findings:
                false_alarms[f.check] += 1
    total = sum(false_alarms.values())
    print(
        f"\ncorrect reference solutions: {args.solutions} solutions, {steps} steps; a check fired "
        f"{total} times ({total / steps:.1%} of steps): "
        + ", ".join(f"{name} {false_alarms[name]}" for name in CHECKS if false_alarms[name])
    )


if __name__ == "__main__":
    main()

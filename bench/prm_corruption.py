"""The PRM on corrupted solutions: does it rate the corrupted step below the original, and does it
find the first wrong step? Per corruption kind (``bench.prm_corruption_suite``), for each model.

    STEPWISE_SHARED_DATA=../shared/data python -m bench.prm_corruption \\
        [--model "bow today=DIR" --model "bow + checks=DIR"] [--per-kind 60] [--seed 0]

Without ``--model`` it trains (or reuses, in ``bench/out/corruption/``) today's ``bow``
(``checks=false``: exactly the features of version 2) and the new default (``bow`` with the
checks) on the PRM800K phase 1 export ``bench/out/phase1_trl.jsonl`` (``python -m
bench.prm_make_trl`` makes it). For each kind it prints the pairs where the corrupted step scores
below the original one, and ProcessBench's first-error F1 (corrupted solutions against their
originals, at the model's own first-error threshold from its validation split); the last line is
over the whole suite. "checks fired" is the share of corrupted steps on which a check of
``prm.checks`` fired, and of original steps (any step) on which one fired.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from bench.prm_common import ROOT, require, shared_data
from bench.prm_corruption_suite import KINDS, build_suite

OUT = ROOT / "bench" / "out" / "corruption"
EXPORT = ROOT / "bench" / "out" / "phase1_trl.jsonl"


def default_models() -> list[tuple[str, Path]]:
    if not EXPORT.exists():
        sys.exit(f"missing {EXPORT}: run python -m bench.prm_make_trl first")
    models = []
    for label, name, options in (
        ("bow today", "bow_today", ["--set", "checks=false"]),
        ("bow + checks", "bow_checks", []),
    ):
        target = OUT / name
        if not (target / "config.json").exists():
            cmd = [sys.executable, "-m", "prm", "train", "--data", str(EXPORT), "--out",
                   str(target), "--backbone", "bow", "--seed", "0", "--quiet",
                   *options]  # fmt: skip
            print("$ " + " ".join(cmd), flush=True)
            subprocess.run(cmd, cwd=ROOT, check=True)
        models.append((label, target))
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], help="LABEL=CHECKPOINT_DIR")
    parser.add_argument("--per-kind", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = require(shared_data())
    import prm
    from prm.checks import check_solution
    from prm.metrics import first_error_scores

    started = time.perf_counter()
    cases = build_suite(data, per_kind=args.per_kind, seed=args.seed)
    print(f"suite: {len(cases)} corrupted solutions (seed {args.seed}) in "
          f"{time.perf_counter() - started:.1f} s; sources: "
          + ", ".join(f"{s} {sum(c.source == s for c in cases)}"
                      for s in ("math_train", "gsm8k", "qwen", "prm800k")))  # fmt: skip
    models = [tuple(m.split("=", 1)) for m in args.model] or default_models()

    by_kind: dict[str, list] = defaultdict(list)
    for c in cases:
        by_kind[c.kind].append(c)
    fired_corrupt, fired_original = defaultdict(int), defaultdict(int)
    for c in cases:
        fired_corrupt[c.kind] += bool(check_solution(c.problem, c.corrupted)[c.index])
        fired_original[c.kind] += any(check_solution(c.problem, c.original))

    rows = []
    for label, directory in models:
        scorer = prm.load(directory)
        threshold = scorer.config.get("thresholds", {}).get("first_error", 0.5)
        t = time.perf_counter()
        originals = scorer.score([(c.problem, c.original) for c in cases])
        corrupted = scorer.score([(c.problem, c.corrupted) for c in cases])
        seconds = time.perf_counter() - t
        steps = sum(len(c.original) + len(c.corrupted) for c in cases)
        result = {}
        for kind in [*KINDS, "all"]:
            idx = [i for i, c in enumerate(cases) if kind in ("all", c.kind)]
            if not idx:
                continue
            wins = sum(corrupted[i][cases[i].index] < originals[i][cases[i].index] for i in idx)
            unique = {}
            for i in idx:  # an original solution counts once as an error-free row
                unique.setdefault((cases[i].problem, cases[i].original), originals[i])
            probs = [corrupted[i] for i in idx] + list(unique.values())
            first = [cases[i].index for i in idx] + [-1] * len(unique)
            fe = first_error_scores(probs, first, threshold)
            result[kind] = (len(idx), wins / len(idx), fe)
        rows.append((label, threshold, result, steps / seconds))

    header = (
        "| kind | n | "
        + " | ".join(
            f"{label}: corrupted < original | {label}: first-error F1 (err / clean)"
            for label, *_ in rows
        )
        + " | checks fired: corrupted step / any original step |"
    )
    print()
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    for kind in [*KINDS, "all"]:
        if kind not in rows[0][2]:
            continue
        n = rows[0][2][kind][0]
        cells = []
        for _, _, result, _ in rows:
            _, win, fe = result[kind]
            cells.append(f"{win:.0%}")
            cells.append(f"{fe['f1']:.3f} ({fe['accuracy_erroneous']:.2f} / "
                         f"{fe['accuracy_error_free']:.2f})")  # fmt: skip
        if kind == "all":
            fc, fo = sum(fired_corrupt.values()), sum(fired_original.values())
        else:
            fc, fo = fired_corrupt[kind], fired_original[kind]
        print(f"| {kind} | {n} | " + " | ".join(cells) + f" | {fc / n:.0%} / {fo / n:.0%} |")
    print()
    for label, threshold, _, speed in rows:
        print(f"{label}: first-error threshold {threshold:.3f} (validation); "
              f"scored {speed:,.0f} steps/s here (checks included when on)")  # fmt: skip


if __name__ == "__main__":
    main()

"""Grading agreement and rate on real data with its own correctness labels.

    .venv/bin/python bench/grading.py [--gsm8k-problems 1319]

Reads ``../shared/data`` (or ``$STEPWISE_SHARED_DATA``): the 800 Qwen2.5-Math samples (``score``)
and GSM8K model solutions (``is_correct``, 4 per problem). Extracts each answer, grades it
against the ground truth with ``labeling.grading`` (worker processes, distinct pairs once) and
prints the agreement with the source's label (undecided counts as "not correct") and the rate.
No database needed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("STEPWISE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def qwen() -> list[tuple[str | None, str, bool]]:
    from labeling.grading import extract_answer

    out = []
    with open(DATA / "qwen25math_math_samples" / "math_cot_100.jsonl") as f:
        for line in f:
            r = json.loads(line)
            for response, score in zip(r["response"], r["score"], strict=True):
                out.append((extract_answer(response), r["gt"], score))
    return out


def gsm8k(problems: int) -> list[tuple[str | None, str, bool]]:
    from labeling.grading import extract_answer

    out = []
    with open(DATA / "gsm8k_model_solutions" / "example_model_solutions.jsonl") as f:
        for i, line in enumerate(f):
            if i >= problems:
                break
            r = json.loads(line)
            truth = extract_answer(r["ground_truth"])
            for value in r.values():
                if isinstance(value, dict) and "solution" in value:
                    out.append((extract_answer(value["solution"]), truth, value["is_correct"]))
    return out


def report(name: str, samples: list[tuple[str | None, str, bool]]) -> None:
    from labeling.grading import Grader

    grader = Grader()
    started = time.monotonic()
    results = grader.grade_many((a, t) for a, t, _ in samples)
    seconds = time.monotonic() - started
    grader.close()
    agree = sum(bool(results[(a, t)]) == label for a, t, label in samples)
    undecided = sum(results[(a, t)] is None for a, t, _ in samples)
    misses = [(a, t, label) for a, t, label in samples if bool(results[(a, t)]) != label]
    print(
        f"{name}: {agree}/{len(samples)} agree ({agree / len(samples):.2%}); "
        f"{undecided} undecided; {len(results)} distinct pairs in {seconds:.1f}s "
        f"({len(results) / seconds:.0f} pairs/s, worker start-up included)"
    )
    for answer, truth, label in misses[:10]:
        print(f"  disagree: answer {answer!r} truth {truth!r} source says {label}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gsm8k-problems", type=int, default=1319)
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        sys.exit(f"{DATA} is missing: this benchmark reads ../shared/data (STEPWISE_SHARED_DATA)")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report("Qwen2.5-Math MATH samples (score)", qwen())
    report("GSM8K model solutions (is_correct)", gsm8k(args.gsm8k_problems))


if __name__ == "__main__":
    main()

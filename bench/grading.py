"""Answer grading on real data: agreement with the sources' labels, decided and undecided
pairs, throughput, and whether the results change when every core is busy.

    .venv/bin/python bench/grading.py [--gsm8k-problems 1319] [--hogs N] [--sets qwen,math500]
        [--rules mathematical,prm800k]

Reads ``../shared/data`` (or ``$STEPWISE_SHARED_DATA``). The sets, each graded by a fresh
``labeling.grading.Grader`` (worker processes, distinct pairs once):

- ``qwen``: the 800 Qwen2.5-Math MATH samples, with their ``score``;
- ``gsm8k``: GSM8K model solutions (4 per problem), with their ``is_correct``;
- ``math500``: MATH-500's 500 truths, each against its reference solution's boxed answer and
  against the answers of the next 4 problems of its subject (answers of every shape: intervals,
  matrices, sets, expressions, words; no labels: the reference pairs are right, almost all
  others wrong);
- ``prm800k``: PRM800K phase 1's final answers (GPT-4's, from the candidate steps) against their
  problems' truths, with the labeler's rating of the answer step as the label (+1 right, -1
  wrong; a 0 or unrated answer has none).

Agreement counts undecided as "not correct". ``--rules`` grades every set under each grading
rule named (``labeling.grading.rules``; default: ``mathematical``), one after the other. With
``--hogs N`` (default: one per core; 0: off) every set is graded again, under the first rule,
with N busy-looping processes beside it, and the pairs whose result differs between the two
runs are counted and printed. No database needed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("STEPWISE_SHARED_DATA", ROOT.parent / "shared" / "data"))

Sample = tuple[str | None, str | None, bool | None]  # answer, truth, the source's label


def qwen(_: argparse.Namespace) -> list[Sample]:
    from labeling.grading import extract_answer

    out = []
    with open(DATA / "qwen25math_math_samples" / "math_cot_100.jsonl") as f:
        for line in f:
            r = json.loads(line)
            for response, score in zip(r["response"], r["score"], strict=True):
                out.append((extract_answer(response), r["gt"], score))
    return out


def gsm8k(args: argparse.Namespace) -> list[Sample]:
    from labeling.grading import extract_answer

    out = []
    with open(DATA / "gsm8k_model_solutions" / "example_model_solutions.jsonl") as f:
        for i, line in enumerate(f):
            if i >= args.gsm8k_problems:
                break
            r = json.loads(line)
            truth = extract_answer(r["ground_truth"])
            for value in r.values():
                if isinstance(value, dict) and "solution" in value:
                    out.append((extract_answer(value["solution"]), truth, value["is_correct"]))
    return out


def math500(_: argparse.Namespace) -> list[Sample]:
    from labeling.grading import extract_answer

    rows = [json.loads(line) for line in (DATA / "math500" / "test.jsonl").open()]
    out: list[Sample] = [(extract_answer(r["solution"]), r["answer"], None) for r in rows]
    by_subject = defaultdict(list)
    for r in rows:
        by_subject[r["subject"]].append(r)
    for group in by_subject.values():
        for i, r in enumerate(group):
            for j in range(1, 5):
                out.append((group[(i + j) % len(group)]["answer"], r["answer"], None))
    return out


def prm800k(_: argparse.Namespace) -> list[Sample]:
    path = DATA / "prm800k_phase1_human_labels" / "phase1_train.trajectories.jsonl"
    out: list[Sample] = []
    for line in path.open():
        r = json.loads(line)
        truth = r["question"]["ground_truth_answer"]
        for step in r["label"]["steps"]:
            for c in step["completions"]:
                if "answer" in c:
                    label = {1: True, -1: False}.get(c.get("rating"))
                    out.append((c["answer"], truth, label))
    return out


SETS = {"qwen": qwen, "gsm8k": gsm8k, "math500": math500, "prm800k": prm800k}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def grade(samples: list[Sample], rule: str) -> tuple[dict, float, float, int]:
    """(results, wall seconds, worker CPU seconds, workers killed) of one fresh Grader."""
    from labeling.grading import Grader

    grader = Grader()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    results = grader.grade_many(((a, t) for a, t, _ in samples), rule=rule)
    seconds = time.monotonic() - started
    grader.close()  # its workers exit and count in RUSAGE_CHILDREN
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return results, seconds, cpu, grader.killed


def report(
    name: str, samples: list[Sample], results: dict, seconds: float, cpu: float, killed: int
):
    labelled = [(a, t, label) for a, t, label in samples if label is not None]
    decided = sum(v is not None for v in results.values())
    line = f"  {name}: {len(results)} distinct pairs, {decided} decided, "
    line += f"{len(results) - decided} undecided"
    if labelled:
        agree = sum(bool(results[(a, t)]) == label for a, t, label in labelled)
        line += f"; {agree}/{len(labelled)} agree with the source ({agree / len(labelled):.2%})"
    line += (
        f"; {seconds:.1f} s wall ({len(results) / seconds:.0f} pairs/s, worker start-up "
        f"included), workers' CPU {cpu:.1f} s, {killed} workers killed"
    )
    print(line, flush=True)
    for answer, truth, label in [s for s in labelled if bool(results[s[:2]]) != s[2]][:10]:
        print(f"    disagree: answer {answer!r} truth {truth!r} source says {label}")


def start_hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        hog.kill()
        hog.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gsm8k-problems", type=int, default=1319)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--rules", default="mathematical")
    args = parser.parse_args(argv)
    rules = args.rules.split(",")
    if not DATA.is_dir():
        sys.exit(f"{DATA} is missing: this benchmark reads ../shared/data (STEPWISE_SHARED_DATA)")
    names = args.sets.split(",")
    samples = {name: SETS[name](args) for name in names}
    idle: dict[str, tuple[dict, float, float, int]] = {}
    for rule in rules:
        print(f"{ROOT.name}: idle run, rule {rule}, load average {load()}", flush=True)
        for name in names:
            result = grade(samples[name], rule)
            idle.setdefault(name, result)  # the first rule's, for the run beside the hogs
            report(name, samples[name], *result)
    if not args.hogs:
        return
    hogs = start_hogs(args.hogs)
    try:
        time.sleep(5)  # let the load average see them
        print(f"{ROOT.name}: with {args.hogs} CPU hogs beside it, load average {load()}")
        busy = {}
        for name in names:
            busy[name] = grade(samples[name], rules[0])
            report(name, samples[name], *busy[name])
        print(f"  (load average at the end {load()})")
    finally:
        stop_hogs(hogs)
    for name in names:
        a, b = idle[name][0], busy[name][0]
        differ = [pair for pair in a if a[pair] != b[pair]]
        print(f"  {name}: {len(differ)} of {len(a)} pairs differ between idle and busy")
        for pair in differ[:10]:
            print(f"    {pair!r}: idle {a[pair]}, busy {b[pair]}")


if __name__ == "__main__":
    main()

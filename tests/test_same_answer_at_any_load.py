"""Answer grading and the PRM's step checks give the same results on an idle machine and on one
whose every core is busy (CPU hogs beside them): their work is bounded by its size, never by a
clock. Real answer pairs and real steps from the fixtures, twice each, in fresh processes (so no
cache carries a result from one run to the other), plus inputs that no bound may let through."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from labeling.grading import Grader, extract_answer
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]

# The costliest real pair of bench/grading.py's 2,001 (PRM800K phase 1, GPT-4's answer to a
# MATH train problem): 2.6 CPU seconds in math-verify; math-verify's old 3 s alarm left it
# undecided on a busy machine and decided (False) on an idle one.
SLOWEST_REAL = (
    "\\frac{3}{2} \\sum_{n = 0}^\\infty \\left[ \\frac{1}{x^{2^n} + 1} + \\frac{1}{x^{2^n} - 1}"
    "\\right] - \\frac{1}{2} \\sum_{n = 0}^\\infty \\frac{1}{x^{2^n}}",
    "\\frac{1}{x - 1}",
)
# Each would run for seconds to hours inside math-verify or latex2sympy without a bound.
ADVERSARIAL_PAIRS = [
    ("(x+1)^{2000}", "(x+2)^{2000}"),  # 13 s
    ("2^{10^{100}}", "2^{10^{100}}+1"),
    ("10^{10}!", "3"),
    ("e^{10^{10}}", "e^{10^{10}+1}"),
    ("\\binom{1000000}{500000}", "5"),  # 88 s, while parsing
    ("(" * 400 + "1" + ")" * 400, "1"),  # 4 s to parse, then a failure
    ("x^{20}+x+1=0", "x^{20}+x+2=0"),  # 21 s, and True
    ("(x+y+z)^{20}", "(x+y+z+1)^{20}"),  # 6 s
    ("\\sum_{n=1}^{10^{9}} \\frac{1}{n!}", "e - 1"),
    ("\\int_0^1 e^{x^2} \\sin(x^3) dx", "1"),
    ("\\operatorname{eye}(300)", "1"),
]
ADVERSARIAL_STEPS = [
    "$(x+1)^{2000} = x^{2000} + 1$",
    "$2^{10^{100}} = 7$",
    "$" + "(" * 400 + "1" + ")" * 400 + " = 2$",
    "$\\binom{1000000}{500000} + \\log 2 = 5$",  # 91 s inside latex2sympy
    "$x^{x^{x^{x}}}|_{x=99} = 5$",  # for ever inside latex2sympy
    # exponential backtracking in a regex once: 0.3 s for 9 spans, four times that for each more
    "We list them: " + "   ".join(f"${i}$" for i in range(1, 13)) + "   and stop.",
]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open()]


def real_pairs() -> list[tuple[str | None, str | None]]:
    pairs = []
    qwen = _lines(FIXTURES / "qwen25math_math_samples" / "grading.jsonl")
    for r in qwen:
        pairs += [(extract_answer(tail), r["gt"]) for tail in r["response_tail"]]
    truths = [r["gt"] for r in qwen]  # 100 MATH truths of every shape, against each other
    pairs += [(truths[(i + j) % len(truths)], t) for i, t in enumerate(truths) for j in (1, 2, 3)]
    for r in _lines(FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"):
        truth = extract_answer(r["ground_truth"])
        pairs += [
            (extract_answer(v["solution"]), truth)
            for v in r.values()
            if isinstance(v, dict) and "solution" in v
        ]
    trajectories = FIXTURES / "prm800k_phase1_trajectories"
    for r in _lines(trajectories / "phase1_train.trajectories.sample.jsonl"):
        truth = r["question"]["ground_truth_answer"]
        for step in r["label"]["steps"]:
            pairs += [(c["answer"], truth) for c in step["completions"] if "answer" in c]
    for name in ("phase1_train_examples.jsonl", "phase2_train_examples.jsonl"):
        for r in _lines(FIXTURES / "prm800k_raw_samples" / name):
            q = r["question"]
            pairs.append((q.get("pre_generated_answer"), q["ground_truth_answer"]))
    return [*dict.fromkeys(pairs), SLOWEST_REAL]


def real_solutions() -> list[tuple[str, list[str]]]:
    out = [
        (r["prompt"], r["completions"]) for r in _lines(FIXTURES / "prm" / "phase1_trl_small.jsonl")
    ]
    trajectories = FIXTURES / "prm800k_phase1_trajectories"
    for r in _lines(trajectories / "phase1_train.trajectories.sample.jsonl"):
        steps = [c["text"] for step in r["label"]["steps"] for c in step["completions"]]
        out.append((r["question"]["problem"], steps))
    for name in ("phase1_train_examples.jsonl", "phase2_train_examples.jsonl"):
        for r in _lines(FIXTURES / "prm800k_raw_samples" / name):
            steps = [c["text"] for step in r["label"]["steps"] for c in step["completions"]]
            out.append((r["question"]["problem"], steps))
    for r in _lines(FIXTURES / "processbench_samples" / "processbench_verbatim_samples.jsonl"):
        out.append((r["problem"], r["steps"]))
    for r in _lines(FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"):
        for v in r.values():
            if isinstance(v, dict) and "solution" in v:
                out.append((r["question"], v["solution"].split("\n")))
    out.append(("", ADVERSARIAL_STEPS))
    return out


# Run in a fresh interpreter each time: prm's caches would otherwise answer the second run.
_CHECK = """
import json, sys
from prm.checks import check_solution
solutions = json.load(sys.stdin)
findings = [
    [[[f.check, f.reason] for f in step] for step in check_solution(problem, steps)]
    for problem, steps in solutions
]
json.dump(findings, sys.stdout)
"""


def check_all(solutions: list[tuple[str, list[str]]]) -> list:
    done = subprocess.run(
        [sys.executable, "-c", _CHECK],
        input=json.dumps(solutions),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(done.stdout)


def grade_all(pairs: list[tuple[str | None, str | None]]) -> tuple[dict, int]:
    grader = Grader()  # fresh workers: nothing parsed before
    try:
        return grader.grade_many(pairs), grader.killed
    finally:
        grader.close()


@contextmanager
def every_core_busy() -> Iterator[list[subprocess.Popen]]:
    """Two busy-looping processes per core beside whatever runs in the block."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    try:
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.slow
def test_grading_and_checks_give_the_same_results_idle_and_with_every_core_busy():
    pairs, solutions = real_pairs(), real_solutions()
    all_pairs = pairs + ADVERSARIAL_PAIRS

    idle, idle_killed = grade_all(all_pairs)
    idle_findings = check_all(solutions)
    with every_core_busy() as hogs:
        busy, busy_killed = grade_all(all_pairs)
        busy_findings = check_all(solutions)
        assert all(hog.poll() is None for hog in hogs)  # they were busy all along

    assert busy == idle
    assert busy_findings == idle_findings
    assert idle_killed == busy_killed == 0  # bounded by size: no backstop was needed
    # what was graded and checked is real work, not a run of refusals
    decided = [pair for pair in pairs if idle[pair] is not None]
    assert len(pairs) > 300 and len(decided) > 0.95 * len(pairs)
    assert idle[SLOWEST_REAL] is False
    assert sum(bool(step) for solution in idle_findings for step in solution) > 20
    # and what no bound may let through is undecided, or has no findings, both times
    assert all(idle[pair] is None for pair in ADVERSARIAL_PAIRS)
    assert idle_findings[-1] == [[] for _ in ADVERSARIAL_STEPS]

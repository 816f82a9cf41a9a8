"""Synthetic PRM800K-shaped records for benchmarks (import, queue, export, active learning).

Each record is one PRM800K phase 2 label line: a problem, ``pre_generated_steps`` with an answer,
and (when ``labelled``) a label with one rating per step that stops at the first negative step, the
way phase 2 labelers worked, with a few alternative completions rated at that step. Wrong final
answers are more likely when a step was rated negative, so a PRM has something to learn.

Deterministic for a given seed; generated lazily, so millions of records cost no memory.

    python bench/synthetic.py --n 100000 --out /tmp/synthetic.jsonl [--unlabelled]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

WORDS = (
    "let the number of ways sum product integer prime root square triangle circle area "
    "perimeter value equation solve find compute probability expected digits remainder "
    "divisible polynomial coefficient angle side length ratio rate speed total each"
).split()
STEP_TEMPLATES = [
    "We have ${a} + {b} = {c}$.",
    "So the value is ${a} \\cdot {b} = {c}$.",
    "Then {w1} the {w2} gives ${c}$.",
    "I notice that the {w1} of the {w2} is ${a}$.",
    "Subtracting, we get ${c} - {b} = {a}$.",
    "Therefore $x = \\frac{{{a}}}{{{b}}}$.",
    "The {w1} is {a} and the {w2} is {b}.",
    "Let me check: ${a}^2 = {c}$.",
]


def _problem(rng: random.Random, i: int) -> tuple[str, str]:
    a, b = rng.randint(2, 999), rng.randint(2, 999)
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 30)))
    return f"Problem {i}: {words}. What is ${a} \\times {b}$?", str(a * b)


def _step(rng: random.Random) -> str:
    a, b = rng.randint(1, 500), rng.randint(1, 500)
    return rng.choice(STEP_TEMPLATES).format(
        a=a, b=b, c=a + b, w1=rng.choice(WORDS), w2=rng.choice(WORDS)
    )


def records(
    n: int,
    *,
    seed: int = 0,
    steps: int = 10,
    solutions_per_problem: int = 4,
    labelled: bool = True,
    labelers: int = 50,
) -> Iterator[dict]:
    """Yield ``n`` PRM800K phase 2 label lines (``label`` is null when not ``labelled``)."""
    rng = random.Random(seed)
    labeler_ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(labelers)]
    start = datetime(2022, 11, 1, 8, 0, 0)
    problem, truth = "", ""
    for i in range(n):
        if i % solutions_per_problem == 0:
            problem, truth = _problem(rng, i // solutions_per_problem)
        k = max(2, int(rng.gauss(steps, 2)))
        pre_steps = [_step(rng) for _ in range(k - 1)]
        first_error = rng.randrange(k) if rng.random() < 0.45 else None
        wrong = rng.random() < (0.85 if first_error is not None else 0.15)
        answer = str(int(truth) + rng.randint(1, 9)) if wrong else truth
        pre_steps.append(f"# Answer\n\n{answer}")
        label = None
        if labelled:
            label_steps = []
            for j, text in enumerate(pre_steps):
                if first_error is not None and j == first_error:
                    completions = [{"text": text, "rating": -1, "flagged": None}]
                    completions += [
                        {"text": _step(rng), "rating": rng.choice([-1, 0, 1]), "flagged": False}
                        for _ in range(rng.randint(0, 3))
                    ]
                    label_steps.append(
                        {
                            "completions": completions,
                            "human_completion": None,
                            "chosen_completion": None,
                        }
                    )
                    break
                rating = 1 if rng.random() < 0.85 else 0
                label_steps.append(
                    {
                        "completions": [{"text": text, "rating": rating, "flagged": None}],
                        "human_completion": None,
                        "chosen_completion": 0,
                    }
                )
            label = {
                "steps": label_steps,
                "total_time": rng.randint(20_000, 900_000),
                "finish_reason": "found_error" if first_error is not None else "solution",
            }
        yield {
            "labeler": rng.choice(labeler_ids),
            "timestamp": (start + timedelta(seconds=37 * i)).isoformat(timespec="microseconds"),
            "generation": 6,
            "is_quality_control_question": False,
            "is_initial_screening_question": False,
            "question": {
                "problem": problem,
                "ground_truth_answer": truth,
                "pre_generated_steps": pre_steps,
                "pre_generated_answer": answer,
                "pre_generated_verifier_score": round(rng.random(), 6),
            },
            "label": label,
        }


def write_jsonl(path: Path, n: int, **kwargs) -> Path:
    with open(path, "w") as f:
        for record in records(n, **kwargs):
            f.write(json.dumps(record) + "\n")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--unlabelled", action="store_true")
    args = parser.parse_args(argv)
    write_jsonl(args.out, args.n, seed=args.seed, steps=args.steps, labelled=not args.unlabelled)
    print(f"wrote {args.n} records to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

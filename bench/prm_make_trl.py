"""Convert PRM800K label lines to a `trl` JSONL export with the default label policy.

Development data for the PRM until the app's exporter lands; the rows are what the exporter writes
(``prompt``, ``completions``, ``labels``), plus ``answer``/``answer_correct`` on rows that end in a
final answer (graded by a normalised string match against the ground truth). The policy itself
lives in ``prm.data.prm800k_solutions``, so this script and ``prm train --data raw.jsonl`` agree.

    python -m bench.prm_make_trl [--src PRM800K.jsonl] [--out bench/out/phase1_trl.jsonl]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from bench.prm_common import ROOT, require, shared_data
from prm.data import SPLITS, prm800k_solutions, split_of, step_examples

PHASE1 = Path("prm800k_phase1_human_labels") / "phase1_train.trajectories.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "phase1_trl.jsonl")
    args = parser.parse_args()
    src = require(args.src or shared_data() / PHASE1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    solutions = []
    with src.open(encoding="utf-8") as fh:
        for line in fh:
            solutions.extend(prm800k_solutions(json.loads(line)))
    with args.out.open("w", encoding="utf-8") as fh:
        for s in solutions:
            row = {"prompt": s.problem, "completions": list(s.steps), "labels": list(s.labels)}
            if s.answer_correct is not None:
                row["answer"] = s.answer
                row["answer_correct"] = s.answer_correct
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    problems = Counter(split_of(p) for p in {s.problem for s in solutions})
    steps = step_examples(solutions)
    positive = sum(e.label for e in steps) / len(steps)
    print(f"wrote {args.out}: {len(solutions)} rows, {len(steps)} unique steps")
    print(f"non-negative steps: {positive:.1%}")
    print("problems per split: " + ", ".join(f"{k} {problems[k]}" for k in SPLITS))


if __name__ == "__main__":
    main()

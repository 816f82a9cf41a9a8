"""Scoring throughput of PRM checkpoints: steps per second on this machine.

Solutions are made of real PRM800K phase 1 steps, each made unique by three words drawn from a
small vocabulary (so no per-text cache helps, as when a queue of fresh solutions is scored),
ten steps per solution, behind real problems. Prints steps/s and the wall time.

    python -m bench.prm_throughput --model DIR [--steps 1000000] [--workers 2]
    python -m bench.prm_throughput --model BOW --steps 1000000 --model MINILM --steps 2000
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from bench.prm_common import ROOT
from prm.data import read_dataset

FILLER = (
    "now then so thus hence indeed also first next again here we see note clearly simply "
    "just still which gives means yields shows that this the value result answer term sum"
).split()


def solutions(n_steps: int, seed: int = 0, data: Path | None = None) -> list[tuple[str, list[str]]]:
    data = data or ROOT / "bench" / "out" / "phase1_trl.jsonl"
    if not data.exists():
        raise SystemExit(f"missing {data}: run python -m bench.prm_make_trl first")
    dataset = read_dataset(data)
    steps = sorted({step for s in dataset.solutions for step in s.steps})
    problems = sorted({s.problem for s in dataset.solutions})
    rng = random.Random(seed)
    out = []
    for _ in range(0, n_steps, 10):
        out.append(
            (
                rng.choice(problems),
                [f"{rng.choice(steps)} {' '.join(rng.sample(FILLER, 3))}" for _ in range(10)],
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, action="append", required=True)
    parser.add_argument("--steps", type=int, action="append", default=[])
    parser.add_argument("--workers", type=int, default=1, help="processes for featurising")
    parser.add_argument("--data", type=Path, help="steps from this `trl` file")
    args = parser.parse_args()
    import prm

    counts = args.steps or [1_000_000]
    for i, directory in enumerate(args.model):
        n = counts[min(i, len(counts) - 1)]
        batch = solutions(n, data=args.data)
        scorer = prm.load(directory)
        scorer.score(batch[:50])  # warm up (lazy imports, allocator)
        wall, cpu = time.perf_counter(), time.process_time()
        scorer.score(batch, workers=args.workers)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        steps = sum(len(s) for _, s in batch)
        name = scorer.config["backbone"]["name"]
        print(
            f"{name:<7} {Path(directory).name}: {steps} steps in {wall:.1f} s wall "
            f"({steps / wall:,.0f} steps/s) on {scorer.device}, {args.workers} process(es), "
            f"{prm.runtime_threads()} thread(s) each; main process CPU {cpu:.1f} s"
        )


if __name__ == "__main__":
    main()

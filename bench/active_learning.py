"""The paper's active-learning ablation at small scale, with simulated annotators on real labels.

"Let's Verify Step by Step" (section 4) found that labelling *convincing wrong-answer* solutions
(80% the most convincing wrong-answer ones by the current PRM, 20% the most convincing of the rest)
made labels about 2.6x more data-efficient than labelling uniformly chosen solutions. This script
replays that on the real PRM800K phase 1 human labels in ``../shared/data/`` (read directly; the
repository has only a small extract):

- the pool: every labelled path of the phase 1 trajectories (the chosen path cut at its first
  negative step, and each rated alternative candidate as its own path, PRM800K's default label
  policy via ``prm.read_dataset``); a path that ends in a final answer is graded against the
  ground truth (``answer_correct``); ungraded paths count as "the rest", as in the app;
- simulated annotators: labelling a path reveals its real human step ratings (neutral counts as
  positive);
- held out: the test problems (a hash of the problem text, ``prm.split_of``), never selected; the
  metric is the step-level AUROC on them (each distinct step once);
- uniform: a random sample of ``budget`` paths; active: a uniform seed of half the smallest
  budget, then rounds up to each budget, each selecting the next paths with the app's own order
  (``learning.active_learning.queue_order``, 80/20) by the PRM trained on what was selected so far;
- a second source (``--source reference``; both run by default) follows the paper more closely:
  a pool of model-generated solutions (800 Qwen2.5-Math MATH and 5,276 GPT-3 GSM8K solutions,
  graded), whose steps a reference PRM trained on every phase 1 label rates (the paper's PRM_large
  labelling for PRM_small);
- at each budget: the held-out AUROC of a ``bow`` PRM trained on what was selected, the share of
  wrong-answer paths among them, and the data-efficiency ratio: the budget uniform selection needs
  to reach active's AUROC (interpolated on log(budget) between uniform's points) over active's.

    python -m bench.active_learning                      # a few minutes on 2 cores
    python -m bench.active_learning --seeds 0 1 2 --budgets 200 400 800 --uniform-extra 1600 3200
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _default_data() -> Path:
    """``../shared/data`` beside the checkout, or ``$STEPWISE_SHARED_DATA`` (as bench/prm_*)."""
    shared = os.environ.get("STEPWISE_SHARED_DATA") or ROOT.parent / "shared" / "data"
    return Path(shared) / "prm800k_phase1_human_labels"


TRAJECTORIES = "phase1_train.trajectories.jsonl"


class Pool:
    """The paths with their prepared features (computed once: features do not depend on weights)."""

    def __init__(self, solutions, *, backbone) -> None:
        self.solutions = solutions
        self.backbone = backbone
        self.unique: dict = {}
        self.items: list = []
        self.refs: list[np.ndarray] = []  # per path: indexes of its steps' unique items
        for s in solutions:
            idx = []
            for item in backbone.prepare(s.problem, s.steps):
                k = self.unique.get(item.key)
                if k is None:
                    k = self.unique[item.key] = len(self.items)
                    self.items.append(item)
                idx.append(k)
            self.refs.append(np.asarray(idx, dtype=np.int64))

    def logits(self, backbone) -> np.ndarray:
        from prm.scoring import item_logits

        flat, _ = item_logits(backbone, self.items, device=_cpu(), batch_size=4096)
        return flat

    def scores(self, scorer) -> np.ndarray:
        """Each path's PRM score: the product of its steps' calibrated P(correct)."""
        from prm.scoring import calibrate

        probs = calibrate(self.logits(scorer.backbone), scorer.calibration)
        logp = np.log(np.maximum(probs, 1e-300))
        return np.array([math.exp(logp[r].sum()) for r in self.refs])


def _cpu():
    import torch

    return torch.device("cpu")


def step_auroc(scorer, test: Pool) -> float:
    """AUROC of the steps of the held-out paths, each distinct step once (first label wins)."""
    from prm.metrics import auroc

    labels = np.zeros(len(test.items), dtype=bool)
    seen = np.zeros(len(test.items), dtype=bool)
    for s, refs in zip(test.solutions, test.refs, strict=True):
        for lab, k in zip(s.labels, refs, strict=True):
            if not seen[k]:
                seen[k] = True
                labels[k] = lab
    return float(auroc(labels, test.logits(scorer.backbone)))


def train(solutions, *, seed: int, workdir: Path, name: str):
    import prm

    out = workdir / name
    prm.train(list(solutions), out, backbone="bow", seed=seed, progress=False)
    return prm.load(out)


def run_uniform(pool: Pool, test: Pool, budgets, *, seed: int, workdir: Path) -> dict:
    order = list(range(len(pool.solutions)))
    random.Random(seed).shuffle(order)
    out = {}
    for b in budgets:
        chosen = order[:b]
        scorer = train(
            [pool.solutions[i] for i in chosen], seed=seed, workdir=workdir, name=f"u{b}"
        )
        out[b] = {"auroc": step_auroc(scorer, test), "wrong": _wrong_share(pool, chosen)}
    return out


def run_active(pool: Pool, test: Pool, budgets, *, seed: int, share: float, workdir: Path) -> dict:
    from learning.active_learning import Scored, queue_order

    order = list(range(len(pool.solutions)))
    random.Random(seed).shuffle(order)
    chosen = order[: max(1, budgets[0] // 2)]  # the uniform seed set
    taken = set(chosen)
    out = {}
    scorer = train([pool.solutions[i] for i in chosen], seed=seed, workdir=workdir, name="a0")
    for b in budgets:
        scores = pool.scores(scorer)
        candidates = [
            Scored(i, float(scores[i]), pool.solutions[i].answer_correct)
            for i in range(len(pool.solutions))
            if i not in taken
        ]
        for s in queue_order(candidates, wrong_share=share)[: b - len(chosen)]:
            chosen.append(s.solution_id)
            taken.add(s.solution_id)
        scorer = train(
            [pool.solutions[i] for i in chosen], seed=seed, workdir=workdir, name=f"a{b}"
        )
        out[b] = {"auroc": step_auroc(scorer, test), "wrong": _wrong_share(pool, chosen)}
    return out


def _wrong_share(pool: Pool, chosen) -> float:
    return sum(1 for i in chosen if pool.solutions[i].answer_correct is False) / len(chosen)


def budget_to_match(target: float, uniform: dict[int, float]) -> tuple[str, float] | None:
    """The budget at which uniform's AUROC first reaches ``target``, interpolated on log(budget)
    from the last budget below it: ``("", b)``; ``("<=", smallest)`` when uniform's smallest
    budget already reaches it; None when none does (the ratio is then above largest/budget)."""
    points = sorted(uniform.items())
    for k, (b1, a1) in enumerate(points):
        if a1 >= target:
            if k == 0:
                return "<=", float(b1)
            b0, a0 = points[k - 1]
            t = (target - a0) / (a1 - a0)
            return "", math.exp(math.log(b0) + t * (math.log(b1) - math.log(b0)))
    return None


def phase1_rows(path: Path) -> tuple[list, str]:
    import prm

    rows = [s for s in prm.read_dataset(path).solutions if s.labels is not None]
    return rows, "real human ratings (PRM800K phase 1)"


def reference_rows(phase1: Path, shared: Path, workdir: Path) -> tuple[list, str]:
    """Model solutions labelled by a reference PRM trained on every phase 1 label (the paper's
    PRM_large supervising PRM_small): 800 Qwen2.5-Math MATH and 5,276 GPT-3 GSM8K solutions, each
    step labelled positive when the reference's calibrated P(correct) is at least 0.5."""
    import prm
    from bench.prm_best_of_n import gsm8k_groups, qwen_groups
    from prm.data import Solution

    qwen = shared / "qwen25math_math_samples" / "math_cot_100.jsonl"
    gsm8k = shared / "gsm8k_model_solutions" / "example_model_solutions.jsonl"
    for needed in (qwen, gsm8k):
        if not needed.is_file():
            sys.exit(f"error: {needed} is missing (the reference source reads ../shared/data)")
    prm.train(phase1, workdir / "reference", backbone="bow", progress=False, holdout=False)
    reference = prm.load(workdir / "reference")
    solutions = [
        (g["problem"], steps, answer, ok)
        for g in qwen_groups(qwen) + gsm8k_groups(gsm8k)
        for steps, answer, ok in g["candidates"]
        if steps
    ]
    probs = reference.score([(p, st) for p, st, _, _ in solutions])
    rows = [
        Solution(p, tuple(st), tuple(x >= 0.5 for x in pr), answer, ok)
        for (p, st, answer, ok), pr in zip(solutions, probs, strict=True)
    ]
    return rows, "a reference bow PRM trained on all phase 1 labels, on GSM8K and MATH solutions"


def experiment(rows, what: str, args) -> None:
    import prm
    from prm.backbones import build_backbone

    t0 = time.perf_counter()
    test_rows = [s for s in rows if prm.split_of(s.problem) == "test"]
    pool_rows = [s for s in rows if prm.split_of(s.problem) != "test"]
    backbone = build_backbone("bow")
    pool, test = Pool(pool_rows, backbone=backbone), Pool(test_rows, backbone=backbone)
    wrong = sum(1 for s in pool_rows if s.answer_correct is False)
    graded = sum(1 for s in pool_rows if s.answer_correct is not None)
    positive = statistics.mean(lab for s in pool_rows for lab in s.labels)
    print(f"\n## Labels from {what}\n")
    print(
        f"pool: {len(pool_rows):,} labelled paths of {len({s.problem for s in pool_rows})} "
        f"problems ({graded:,} with a graded final answer, {wrong:,} of them wrong, "
        f"{wrong / len(pool_rows):.1%} of the pool; {positive:.0%} of steps positive); held out: "
        f"{len(test_rows):,} paths of {len({s.problem for s in test_rows})} test problems, "
        f"{len(test.items):,} distinct steps; prepared in {time.perf_counter() - t0:.0f} s"
    )
    cap = len(pool_rows)
    budgets = sorted({min(b, cap) for b in args.budgets})
    uniform_budgets = sorted(set(budgets) | {min(b, cap) for b in args.uniform_extra})
    results = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory(prefix="stepwise-al-bench-") as tmp:
            t = time.perf_counter()
            uni = run_uniform(pool, test, uniform_budgets, seed=seed, workdir=Path(tmp))
            act = run_active(pool, test, budgets, seed=seed, share=args.share, workdir=Path(tmp))
            results.append((uni, act))
            print(f"seed {seed}: {time.perf_counter() - t:.0f} s", file=sys.stderr)

    def mean(values):
        values = [v for v in values if v is not None]
        return statistics.mean(values) if values else None

    def sd(values):
        return statistics.stdev(values) if len(values) > 1 else 0.0

    print()
    print(
        f"Held-out step AUROC (mean of {len(args.seeds)} seed(s) ± sd), share of wrong-answer "
        f"paths labelled, and the data-efficiency ratio (uniform budget needed / active budget)"
    )
    print(
        "| budget | uniform AUROC | active AUROC | wrong-answer share: uniform | active "
        "| uniform budget to match active | ratio |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for b in uniform_budgets:
        u = [r[0][b]["auroc"] for r in results]
        uw = mean([r[0][b]["wrong"] for r in results])
        if b in budgets:
            a = [r[1][b]["auroc"] for r in results]
            aw = mean([r[1][b]["wrong"] for r in results])
            curve = {bb: mean([r[0][bb]["auroc"] for r in results]) for bb in uniform_budgets}
            match = budget_to_match(mean(a), curve)
            if match is None:
                need_s, ratio = f"> {max(uniform_budgets):,}", f"> {max(uniform_budgets) / b:.1f}x"
            else:
                need_s, ratio = f"{match[0]}{match[1]:,.0f}", f"{match[0]}{match[1] / b:.2f}x"
            print(
                f"| {b:,} | {mean(u):.3f} ± {sd(u):.3f} | {mean(a):.3f} ± {sd(a):.3f} "
                f"| {uw:.1%} | {aw:.1%} | {need_s} | {ratio} |"
            )
        else:
            print(f"| {b:,} | {mean(u):.3f} ± {sd(u):.3f} | | {uw:.1%} | | | |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=_default_data(), help="the phase 1 folder")
    parser.add_argument("--budgets", type=int, nargs="+", default=[200, 400, 800, 1600])
    parser.add_argument(
        "--uniform-extra",
        type=int,
        nargs="*",
        default=[3200, 6400],
        help="larger uniform budgets, so the budget uniform needs can be read off",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--share", type=float, default=0.8, help="wrong-answer share (0.8)")
    parser.add_argument(
        "--source",
        choices=["phase1", "reference", "both"],
        default="both",
        help="who labels: the real phase 1 ratings, a reference PRM on model solutions, or both",
    )
    args = parser.parse_args(argv)

    path = args.data / TRAJECTORIES
    if not path.is_file():
        sys.exit(
            f"error: {path} is missing. This benchmark reads the real PRM800K phase 1 labels from "
            "../shared/data/prm800k_phase1_human_labels/ beside the checkout; set "
            "STEPWISE_SHARED_DATA to the shared data folder or pass --data."
        )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    import django

    django.setup()  # for learning.active_learning.queue_order (the app's own selection rule)
    shared = args.data.parent
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="stepwise-al-reference-") as tmp:
        if args.source in ("phase1", "both"):
            experiment(*phase1_rows(path), args)
        if args.source in ("reference", "both"):
            experiment(*reference_rows(path, shared, Path(tmp)), args)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""The active-learning ablation: every selection strategy against uniform sampling, on real labels.

"Let's Verify Step by Step" (section 4) found that labelling *convincing wrong-answer* solutions
made labels about 2.6x more data-efficient than labelling uniformly chosen ones. This script
replays that with simulated annotators for every strategy the app offers (``learning.strategies``:
the same functions order the queue), reading ``../shared/data/`` directly:

- pools: ``phase1``: every labelled path of the PRM800K phase 1 trajectories (the chosen path cut
  at its first negative step, each rated alternative as its own path; labelling a path reveals its
  real human step ratings, neutral counting as positive); ``reference``: 800 Qwen2.5-Math MATH and
  5,276 GPT-3 GSM8K solutions, graded, whose steps a reference ``bow`` PRM trained on every phase 1
  label rates (the paper's PRM_large labelling for PRM_small);
- held out: the test problems (a hash of the problem text, ``prm.split_of``), never selected;
- a strategy starts from a uniform seed of half the smallest budget, then at each budget orders the
  rest of the pool by the PRM trained on what it selected so far and takes the head (``verifier``
  orders by the imported reward score, which only the Qwen solutions have: not run on phase 1);
  uniform takes a random prefix of the same shuffled pool; budgets go up to the pool's size;
- ``machines-disagree`` orders by how much the machines disagree on a solution's steps (the PRM
  being trained, rollouts from each step, a judge's first error: ``machine_conflict``); no
  endpoint answers here, so the machines' words are simulated from the solution's own labels at
  stated qualities (``simulate_evidence``: ``--rollouts`` completions per step, each reaching the
  answer with a chance drawn per solution in ``--rollout-sound`` while the prefix is sound and
  ``--rollout-broken`` after its first wrong step; a judge naming the true first error with
  probability ``--judge-hit``, else any step or none), drawn once per seed;
- at each budget a fresh ``bow`` PRM is trained on the selection (train/validation split by
  problem as ``prm train``) and measured three ways: held-out step AUROC (each distinct step once);
  first-error F1 (ProcessBench's, at the threshold fitted on the selection's validation problems)
  on the held-out paths; best-of-N accuracy (product of step scores; all 4 or 8 solutions) on the
  held-out problems of the Qwen and GSM8K sets, the same problems for both pools;
- the data-efficiency ratio: the budget uniform needs to reach the strategy's mean measure
  (interpolated on log(budget) along uniform's mean curve) over the strategy's budget, with a 95%
  bootstrap interval over seeds (seeds resampled, strategy and uniform together).

    python -m bench.active_learning                                 # about 15-20 min on 2 cores
    python -m bench.active_learning --seeds 0 1 --source reference  # a quicker look
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.active_learning_report import merge, report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRAJECTORIES = "phase1_train.trajectories.jsonl"


def default_data() -> Path:
    """``../shared/data`` beside the checkout, or ``$STEPWISE_SHARED_DATA`` (as bench/prm_*)."""
    shared = os.environ.get("STEPWISE_SHARED_DATA") or ROOT.parent / "shared" / "data"
    return Path(shared) / "prm800k_phase1_human_labels"


class Pool:
    """Solutions with their prepared features (computed once: features do not depend on weights).

    ``cache`` maps ``(problem, steps)`` to the prepared items, for ``prm.train(prepare_cache=)``.
    """

    def __init__(self, solutions, *, backbone, cache: dict) -> None:
        self.solutions = solutions
        self.unique: dict = {}
        self.items: list = []
        self.refs: list[np.ndarray] = []  # per solution: indexes of its steps' unique items
        self.verifier: list = []  # per solution: its imported verifier score (or None)
        # by seed, per solution: the machines' words on each step (``simulate_evidence``)
        self.evidence: dict[int, list[dict[int, list[float]]]] = {}
        for s in solutions:
            prepared = cache.get((s.problem, tuple(s.steps)))
            if prepared is None:
                prepared = cache[(s.problem, tuple(s.steps))] = backbone.prepare(s.problem, s.steps)
            idx = []
            for item in prepared:
                k = self.unique.get(item.key)
                if k is None:
                    k = self.unique[item.key] = len(self.items)
                    self.items.append(item)
                idx.append(k)
            self.refs.append(np.asarray(idx, dtype=np.int64))

    def probs(self, scorer) -> np.ndarray:
        """Calibrated P(correct) of every unique item."""
        import torch

        from prm.scoring import calibrate, item_logits

        flat, _ = item_logits(
            scorer.backbone, self.items, device=torch.device("cpu"), batch_size=4096
        )
        return calibrate(flat, scorer.calibration)

    def per_solution(self, scorer) -> list[np.ndarray]:
        p = self.probs(scorer)
        return [p[r] for r in self.refs]


def measure(scorer, test: Pool, bon: Pool, bon_groups) -> dict:
    """The three measures of one trained PRM."""
    from prm.bestofn import Candidate, curve
    from prm.metrics import aggregate, auroc, first_error_scores

    probs = test.probs(scorer)
    labels = np.zeros(len(test.items), dtype=bool)
    seen = np.zeros(len(test.items), dtype=bool)
    for s, refs in zip(test.solutions, test.refs, strict=True):
        for lab, k in zip(s.labels, refs, strict=True):
            if not seen[k]:
                seen[k] = True
                labels[k] = lab
    threshold = scorer.config.get("thresholds", {}).get("first_error", 0.5)
    first = first_error_scores(
        [probs[r] for r in test.refs], [s.first_error for s in test.solutions], threshold
    )
    scores = [aggregate(p, "product") for p in bon.per_solution(scorer)]
    groups, k = [], 0
    for g in bon_groups:
        groups.append([Candidate(a, ok, {"prm": scores[k + i]}) for i, (a, ok) in enumerate(g)])
        k += len(g)
    at_all = curve(groups, methods=["prm"], samples=1)["accuracy"]["prm"][-1]
    return {"auroc": float(auroc(labels, probs)), "fe_f1": first["f1"], "bon": at_all}


class Trainer:
    """Trains ``bow`` PRMs on selections of one pool, with the pool's prepared items."""

    def __init__(self, cache: dict, workdir: Path) -> None:
        self.cache, self.workdir, self.n = cache, workdir, 0

    def __call__(self, solutions, *, seed: int):
        import prm

        self.n += 1
        out = self.workdir / f"m{self.n}"
        prm.train(
            list(solutions), out, backbone="bow", seed=seed, progress=False,
            prepare_cache=self.cache,
        )  # fmt: skip
        scorer = prm.load(out)
        return scorer


def run_uniform(pool, test, bon, bon_groups, budgets, *, seed, train) -> dict:
    order = list(range(len(pool.solutions)))
    random.Random(seed).shuffle(order)
    out = {}
    for b in budgets:
        chosen = order[:b]
        scorer = train([pool.solutions[i] for i in chosen], seed=seed)
        out[b] = measure(scorer, test, bon, bon_groups) | _composition(pool, chosen)
    return out


def simulate_evidence(
    solutions, *, seed: int, k: int, sound: tuple[float, float], broken: float, judge_hit: float
) -> list[dict[int, list[float]]]:
    """Machine evidence on every step of every solution, simulated from its labels (there is no
    endpoint to ask here): a rollout value per step, the share of ``k`` completions reaching the
    answer, each with probability ``q`` (drawn per solution from ``sound``: problems differ in
    difficulty) while the prefix up to the step is sound and ``broken`` from the first wrong
    step on; and a judge's verdict, 1 on the steps before the step it names and 0 on that one,
    which is the true first error with probability ``judge_hit``, else a step drawn uniformly
    (or none). As ``StepEvidence`` stores them, so ``machine_conflict`` reads them as the app."""
    rng = random.Random(seed * 104729 + 17)
    out = []
    for s in solutions:
        n, first = len(s.steps), s.first_error
        q = rng.uniform(*sound)
        words: dict[int, list[float]] = {}
        for i in range(n):
            p = q if first == -1 or i < first else broken
            words[i] = [sum(rng.random() < p for _ in range(k)) / k]
        named = first if rng.random() < judge_hit else rng.randrange(-1, n)
        for i in range(n if named == -1 else named + 1):
            words[i].append(0.0 if i == named else 1.0)
        out.append(words)
    return out


def run_strategy(name, pool, test, bon, bon_groups, budgets, *, seed, share, train) -> dict:
    from learning.machine_evidence import machine_conflict
    from learning.ordering import Scored
    from learning.strategies import MACHINES_DISAGREE, strategy_order
    from prm.metrics import step_entropy

    order = list(range(len(pool.solutions)))
    random.Random(seed).shuffle(order)
    chosen = order[: max(1, budgets[0] // 2)]  # the uniform seed set
    taken = set(chosen)
    scorer = train([pool.solutions[i] for i in chosen], seed=seed)
    out = {}
    for b in budgets:
        probs = pool.per_solution(scorer)
        candidates = [
            Scored(
                i,
                float(np.exp(np.log(np.maximum(probs[i], 1e-300)).sum())),
                pool.solutions[i].answer_correct,
                uncertainty=step_entropy(probs[i]),
                verifier_score=pool.verifier[i],
                machine_conflict=(
                    machine_conflict(probs[i], pool.evidence[seed][i])
                    if name == MACHINES_DISAGREE
                    else None
                ),
            )
            for i in range(len(pool.solutions))
            if i not in taken
        ]
        for s in strategy_order(name, candidates, wrong_share=share, seed=seed)[: b - len(chosen)]:
            chosen.append(s.solution_id)
            taken.add(s.solution_id)
        scorer = train([pool.solutions[i] for i in chosen], seed=seed)
        out[b] = measure(scorer, test, bon, bon_groups) | _composition(pool, chosen)
    return out


def _composition(pool: Pool, chosen) -> dict:
    return {
        "wrong": sum(1 for i in chosen if pool.solutions[i].answer_correct is False) / len(chosen),
        "steps": sum(len(pool.solutions[i].steps) for i in chosen),
    }


def phase1_rows(path: Path) -> tuple[list, str]:
    import prm

    rows = [s for s in prm.read_dataset(path).solutions if s.labels is not None]
    return rows, "real human ratings (PRM800K phase 1)"


def model_solutions(shared: Path, *, limit_gsm8k: int | None = None):
    """``[(problem, steps, answer, correct, verifier score)]`` of the Qwen and GSM8K sets."""
    from bench.prm_best_of_n import gsm8k_groups, qwen_groups

    qwen = shared / "qwen25math_math_samples" / "math_cot_100.jsonl"
    gsm8k = shared / "gsm8k_model_solutions" / "example_model_solutions.jsonl"
    for needed in (qwen, gsm8k):
        if not needed.is_file():
            sys.exit(f"error: {needed} is missing (this benchmark reads ../shared/data)")
    rewards = []
    for line in qwen.open(encoding="utf-8"):
        r = json.loads(line)
        rewards.append([(s[0] if isinstance(s, list) else s) for s in r.get("pred_score") or []])
    out = []
    for k, g in enumerate(qwen_groups(qwen)):
        for i, (steps, answer, ok) in enumerate(g["candidates"]):
            if steps:
                score = rewards[k][i] if i < len(rewards[k]) else None
                out.append((g["problem"], steps, answer, ok, score))
    for g in gsm8k_groups(gsm8k)[:limit_gsm8k]:
        for steps, answer, ok in g["candidates"]:
            if steps:
                out.append((g["problem"], steps, answer, ok, None))
    return out


def reference_rows(phase1: Path, solutions, workdir: Path) -> tuple[list, dict, str]:
    """Model solutions labelled by a reference PRM trained on every phase 1 label (the paper's
    PRM_large supervising PRM_small): each step positive when its P(correct) is at least 0.5."""
    import prm
    from prm.data import Solution

    prm.train(phase1, workdir / "reference", backbone="bow", progress=False, holdout=False)
    reference = prm.load(workdir / "reference")
    probs = reference.score([(p, st) for p, st, *_ in solutions])
    rows, verifier = [], {}
    for (p, st, answer, ok, score), pr in zip(solutions, probs, strict=True):
        row = Solution(p, tuple(st), tuple(x >= 0.5 for x in pr), answer, ok)
        rows.append(row)
        verifier[id(row)] = score
    return rows, verifier, "a reference bow PRM trained on all phase 1 labels, on GSM8K and MATH"


def experiment(rows, what: str, args, *, verifier: dict, bon_rows, source: str) -> dict:
    import prm
    from prm.backbones import build_backbone
    from prm.bestofn import normalise_answer
    from prm.data import Solution

    t0 = time.perf_counter()
    cache: dict = {}
    test_rows = [s for s in rows if prm.split_of(s.problem) == "test"]
    pool_rows = [s for s in rows if prm.split_of(s.problem) != "test"]
    backbone = build_backbone("bow")
    pool = Pool(pool_rows, backbone=backbone, cache=cache)
    pool.verifier = [verifier.get(id(s)) for s in pool_rows]
    pool.evidence = {
        seed: simulate_evidence(
            pool_rows,
            seed=seed,
            k=args.rollouts,
            sound=tuple(args.rollout_sound),
            broken=args.rollout_broken,
            judge_hit=args.judge_hit,
        )
        for seed in args.seeds
    }
    test = Pool(test_rows, backbone=backbone, cache=cache)
    held = [r for r in bon_rows if prm.split_of(r[0]) == "test"]
    by_problem: dict[str, list] = {}
    for p, st, answer, ok, _ in held:
        by_problem.setdefault(p, []).append(Solution(p, tuple(st), None, answer, ok))
    bon_solutions = [s for g in by_problem.values() for s in g]
    bon = Pool(bon_solutions, backbone=backbone, cache=cache)
    bon_groups = [
        [(normalise_answer(s.answer), bool(s.answer_correct)) for s in g]
        for g in by_problem.values()
    ]
    wrong = sum(1 for s in pool_rows if s.answer_correct is False)
    graded = sum(1 for s in pool_rows if s.answer_correct is not None)
    positive = statistics.mean(lab for s in pool_rows for lab in s.labels)
    print(f"\n## Labels from {what}\n")
    print(
        f"pool: {len(pool_rows):,} labelled solutions of {len({s.problem for s in pool_rows})} "
        f"problems ({graded:,} with a graded final answer, {wrong:,} of them wrong, "
        f"{wrong / len(pool_rows):.1%} of the pool; {positive:.0%} of steps positive); held out: "
        f"{len(test_rows):,} solutions of {len({s.problem for s in test_rows})} test problems, "
        f"{len(test.items):,} distinct steps; best-of-N: {len(bon_groups)} held-out problems, "
        f"{len(bon_solutions)} solutions; prepared in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    cap = len(pool_rows)
    budgets = sorted({min(b, cap) for b in args.budgets} | {cap})
    # uniform also at larger budgets, so the budget it needs can be read off its curve
    uniform_budgets = sorted(set(budgets) | {min(b, cap) for b in args.uniform_extra})
    strategies = [
        s
        for s in args.strategies
        if s != "uniform"
        and not (s == "verifier" and not any(v is not None for v in pool.verifier))
    ]
    skipped = [s for s in args.strategies if s not in strategies and s != "uniform"]
    uniform_runs: list[dict] = []
    runs: dict[str, list[dict]] = {s: [] for s in strategies}
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="stepwise-al-bench-") as tmp:
        train = Trainer(cache, Path(tmp))
        for seed in args.seeds:
            t = time.perf_counter()
            uni = run_uniform(pool, test, bon, bon_groups, uniform_budgets, seed=seed, train=train)
            uniform_runs.append(uni)
            times["uniform"] = times.get("uniform", 0) + time.perf_counter() - t
            for name in strategies:
                t = time.perf_counter()
                # at the whole pool every strategy has selected everything: uniform's model
                res = run_strategy(
                    name, pool, test, bon, bon_groups, budgets[:-1],
                    seed=seed, share=args.share, train=train,
                )  # fmt: skip
                res[cap] = uni[cap]
                runs[name].append(res)
                times[name] = times.get(name, 0) + time.perf_counter() - t
            print(
                f"seed {seed} done at {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True
            )
    report(uniform_runs, runs, uniform_budgets, budgets, args, skipped=skipped)
    print(
        "\nseconds per strategy (all seeds): "
        + ", ".join(f"{k} {v:.0f}" for k, v in times.items())
        + f"; this source {time.perf_counter() - t0:.0f} s"
    )
    return {
        "source": source,
        "budgets": budgets,
        "uniform_budgets": uniform_budgets,
        "seeds": list(args.seeds),
        "uniform": uniform_runs,
        "strategies": runs,
        "skipped": skipped,
    }


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    import django

    django.setup()  # learning.strategies: the app's own selection rules
    from learning.strategies import NAMES, SERVED_PRM

    # The pools have no served PRM's scores (that strategy is the selector-quality sweep's).
    NAMES = [n for n in NAMES if n != SERVED_PRM]

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data(), help="the phase 1 folder")
    parser.add_argument("--budgets", type=int, nargs="+", default=[200, 400, 800, 1600, 3200])
    parser.add_argument(
        "--uniform-extra",
        type=int,
        nargs="*",
        default=[3200, 6400],
        help="larger budgets for uniform only, so the budget it needs can be read off",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--strategies", nargs="+", default=NAMES, choices=NAMES)
    parser.add_argument("--share", type=float, default=0.8, help="wrong-answer share (0.8)")
    parser.add_argument(
        "--source",
        choices=["phase1", "reference", "both"],
        default="both",
        help="who labels: the real phase 1 ratings, a reference PRM on model solutions, or both",
    )
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--rollouts", type=int, default=8, help="simulated rollouts per step (8)")
    parser.add_argument(
        "--rollout-sound",
        type=float,
        nargs=2,
        default=[0.3, 0.9],
        help="the range of a sound prefix's chance to reach the answer, drawn per solution",
    )
    parser.add_argument(
        "--rollout-broken", type=float, default=0.1, help="the chance after a wrong step (0.1)"
    )
    parser.add_argument(
        "--judge-hit", type=float, default=0.6, help="the judge names the first error (0.6)"
    )
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        help="print the tables of --json files of the same pools run with other seeds (several "
        "processes, one per group of seeds), without running anything",
    )
    parser.add_argument("--limit-gsm8k", type=int, default=None, help="fewer GSM8K problems")
    args = parser.parse_args(argv)

    if args.merge:
        merge(args.merge, args)
        return
    path = args.data / TRAJECTORIES
    if not path.is_file():
        sys.exit(
            f"error: {path} is missing. This benchmark reads the real PRM800K phase 1 labels from "
            "../shared/data/prm800k_phase1_human_labels/ beside the checkout; set "
            "STEPWISE_SHARED_DATA to the shared data folder or pass --data."
        )
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    solutions = model_solutions(args.data.parent, limit_gsm8k=args.limit_gsm8k)
    results = []
    with tempfile.TemporaryDirectory(prefix="stepwise-al-reference-") as tmp:
        if args.source in ("phase1", "both"):
            rows, what = phase1_rows(path)
            results.append(
                experiment(rows, what, args, verifier={}, bon_rows=solutions, source="phase1")
            )
        if args.source in ("reference", "both"):
            rows, verifier, what = reference_rows(path, solutions, Path(tmp))
            results.append(
                experiment(
                    rows, what, args, verifier=verifier, bon_rows=solutions, source="reference"
                )
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

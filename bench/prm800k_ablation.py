"""PRM800K's active-learning ablation (section 4.2, figure 4a), reproduced as a benchmark.

The paper's setting: a strong PRM (PRM_large) labels; a small *selector* PRM, trained on one
labelled sample per problem, scores a large pool of samples per problem (1,000 there); for each
problem 80% of the chosen samples are its most convincing wrong-answer samples (highest selector
score, wrong final answer) and 20% the most convincing of the rest; small PRMs trained on N
labelled samples per problem are compared by best-of-N accuracy on held-out problems, and the
2.6x is the ratio of the slopes of accuracy against log(labels), active over uniform.

This harness does exactly that with the app's own pieces: the strategies are
``learning.strategies`` applied to one problem's pool at a time (``strategy_order`` over
``learning.ordering.Scored``: ``convincing-wrong`` is then PRM800K's per-problem 80/20 rule), the
labelled samples are written as a ``trl`` file (``prompt``, ``completions``, ``labels``, cut after
the first negative step, as the app's export), ``prm.train`` trains a ``bow`` PRM on it, and
best-of-K on held-out problems picks by the product of its step scores (``prm.metrics``). Per
strategy, accuracy is fitted against log2(N) over the N values; the slope ratio over uniform's has
a 95% bootstrap interval over held-out problems and seeds (both resampled, every strategy and
uniform together). Pools:

- ``world`` (``bench.prm800k_world``): generated problems with known step correctness, errors of
  kinds the ``bow`` features do not read off (a wrong method, well-formed, its arithmetic right; a
  tenth are arithmetic slips the exact checks catch), labelled by the truth with ``--noise`` of
  the step labels flipped (the strong labeller); held out: other problems of the same world;
  ``copied``: the same with a third of the wrong methods turned into copied wrong numbers, which
  the student cannot see; ``tail``: the same with a long tail of topics (defined operations);
- ``phase1``: PRM800K phase 1's real paths and human ratings (``../shared/data``), a problem's
  pool its labelled paths (the chosen path and each rated alternative; about 30 a problem, most
  without a final answer); held out: the Qwen2.5-Math samples of 100 MATH problems (8 each) and
  GPT-3's solutions of the 1,319 GSM8K test problems (4 each), best-of-4; problems in MATH-500
  or in the held-out sets are never trained on;
- ``served`` (``--served URL MODEL``): the world again with a PRM served on vLLM's ``/pooling``
  API as the labeller (a step is positive when its P(correct) is at least 0.5) and as a second
  selector beside the ``bow`` one trained on its labels (what the app's ``served-prm`` does).

``machines-disagree`` needs the other machines' word on each step: simulated from the truth as in
``bench/active_learning.py`` (``simulate_evidence``: rollouts from each step, a judge) and read by
``learning.machine_evidence.machine_conflict`` with the selector's step scores. ``ensemble`` is
ActPRM's: 4 more ``bow`` selectors on bootstrap resamples of the selector's labels by problem.

``--map``: the selector-quality map. The same harness on the world with *planted* selectors, the
truth plus Gaussian noise of a controlled sd on each step (``planted``), whose AUROC at finding the
samples with an error is measured, and the trained ``bow`` selector as a point among them; for each
strategy the AUROC at which its slope ratio crosses 1.0x and 1.5x with the interval above 1.

    python -m bench.prm800k_ablation            # 3 worlds + phase 1: 14 CPU minutes
    python -m bench.prm800k_ablation --map      # the selector-quality map: 15 CPU minutes
    python -m bench.prm800k_ablation --quick    # either, smaller: a few minutes
    python -m bench.prm800k_ablation --served http://gpu-box:8001 Qwen/Qwen2.5-Math-PRM-7B
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.prm800k_harness import (
    SIGMAS,
    STRATEGIES,
    UNIFORM,
    Clock,
    Harness,
    Options,
    Pools,
    load_text,
    noisy_labels,
    phase1_pools,
    planted,
    slope_ratio,
    slopes,
    world_pools,
)
from bench.prm800k_world import COPIED_MIX, ERROR_KINDS, MIX, World, world
from bench.prm_common import ROOT, shared_data

# -- reporting -------------------------------------------------------------------------------------


def report(h: Harness, title: str, selectors: Sequence[str], started: Clock) -> dict[str, Any]:
    """Print one harness's tables; return its figures (for ``--json`` and the map)."""
    from bench.active_learning_report import budget_to_match

    c, p, o = h.curves, h.pools, h.options
    uniform = c.acc[(UNIFORM, UNIFORM)]
    print(f"\n## {title}\n")
    pool_sizes = sorted({len(x) for x in p.train})
    print(
        f"{len(p.train)} training problems, pools of "
        + (f"{pool_sizes[0]}" if len(pool_sizes) == 1 else f"{pool_sizes[0]}-{pool_sizes[-1]}")
        + f" samples ({len(p.flat):,} in all, {sum(s.answer_correct is False for s in p.flat):,}"
        f" with a wrong final answer); held out: {len(p.held_out)} problems, "
        f"{sum(map(len, p.held_out)):,} samples, best-of-{p.k}; N per problem {c.ns}; seeds "
        f"{c.seeds}; labeller noise {o.noise:.0%}" + (f"; {p.note}" if p.note else "")
    )
    base = h.evaluator.baselines()
    print(
        "held-out baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in base.items())
        + f"; {c.trained} PRMs trained; prepared in {h.prepared_s:.0f} s"
    )  # fmt: skip
    for name in selectors:
        aurocs = c.aurocs.get(name, [])
        if aurocs:
            print(
                f"{name}: AUROC at finding the samples with an error "
                f"{statistics.mean(aurocs):.3f} (seeds: {', '.join(f'{a:.3f}' for a in aurocs)})"
            )
    figures: dict[str, Any] = {"title": title, "ns": c.ns, "seeds": c.seeds, "ratios": {}}
    print(
        f"\nbest-of-{p.k} accuracy on the held-out problems (mean over seeds ± sd), the slope "
        "against log2(N) and the slope ratio over uniform (95% bootstrap interval over problems "
        "and seeds; bold: above 1)\n"
    )
    print("| selector | strategy | " + " | ".join(f"N={n}" for n in c.ns) + " | slope | ratio |")
    print("| --- | --- |" + " ---: |" * (len(c.ns) + 2))
    u_cells = [
        f"{uniform[:, j].mean():.3f} ± {np.std(uniform[:, j].mean(axis=1)):.3f}"
        for j in range(len(c.ns))
    ]
    u_slope = float(slopes(uniform.mean(axis=(0, 2)), c.ns))
    print(f"| | uniform | {' | '.join(u_cells)} | {u_slope:+.4f} | 1 |")
    for name in selectors:
        for strategy in o.strategies:
            acc = c.acc.get((name, strategy))
            if acc is None:
                continue
            r = slope_ratio(acc, uniform, c.ns)
            figures["ratios"][f"{name}/{strategy}"] = r.__dict__
            cells = [
                f"{acc[:, j].mean():.3f} ± {np.std(acc[:, j].mean(axis=1)):.3f}"
                for j in range(len(c.ns))
            ]
            print(f"| {name} | {strategy} | {' | '.join(cells)} | {r.slope:+.4f} | {r.cell()} |")
    print(
        "\nlabels to match: the N per problem at which uniform reaches the strategy's mean "
        "accuracy at N (interpolated on log2(N) along uniform's mean curve), over N; `<=` and `>`: "
        "outside uniform's curve (a bound, not a measurement)\n"
    )
    print("| selector | strategy | " + " | ".join(f"N={n}" for n in c.ns) + " |")
    print("| --- | --- |" + " ---: |" * len(c.ns))
    u_curve = {n: float(uniform[:, j].mean()) for j, n in enumerate(c.ns)}
    for name in selectors:
        for strategy in o.strategies:
            acc = c.acc.get((name, strategy))
            if acc is None:
                continue
            cells = []
            for j, n in enumerate(c.ns):
                mark, need = budget_to_match(float(acc[:, j].mean()), u_curve)
                cells.append(f"{mark}{need / n:.2f}x")
            figures["ratios"][f"{name}/{strategy}"]["to_match"] = cells
            print(f"| {name} | {strategy} | " + " | ".join(cells) + " |")
    print("\nwhat each selection holds at each N: wrong-answer share / step labels (mean of seeds)")
    kinds = p.kinds is not None
    if kinds:
        print("/ share of samples whose first error is a wrong method, copied number, slip")
    print("\n| selector | strategy | " + " | ".join(f"N={n}" for n in c.ns) + " |")
    print("| --- | --- |" + " ---: |" * len(c.ns))
    for (name, strategy), held in c.held.items():
        cells = []
        for j in range(len(c.ns)):
            rows = held[j :: len(c.ns)]
            cell = (
                f"{statistics.mean(r['wrong'] for r in rows):.0%} / "
                f"{statistics.mean(r['steps'] for r in rows):,.0f}"
            )
            if kinds:
                cell += " / " + ", ".join(
                    f"{statistics.mean(r[k] for r in rows):.0%}" for k in ERROR_KINDS
                )
            cells.append(cell)
        print(f"| {name} | {strategy} | " + " | ".join(cells) + " |")
    print(f"\n{title}: {started.minutes()}; load {load_text()}", flush=True)
    figures["minutes"] = started.seconds() / 60
    return figures


# -- the three harnesses and the map -------------------------------------------------------------


# The worlds of the default command: (title, error mix, with the long tail of topics)
WORLDS = {
    "world": ("The world that keeps the paper's assumptions", MIX, False),
    "copied": ("The world with copied wrong numbers (which bow cannot see)", COPIED_MIX, False),
    "tail": ("The world with a long tail of topics (defined operations)", MIX, True),
}


def make_world(args: argparse.Namespace, variant: str = "world") -> World:
    _, mix, tail = WORLDS[variant]
    if variant == "world" and args.mix is not None:
        mix = tuple(args.mix)
    return world(
        train_problems=args.problems, held_out_problems=args.held_out, pool=args.pool,
        seed=args.world_seed, mix=mix, tail=tail,
    )  # fmt: skip


def describe_world(w: World, pools: Pools) -> None:
    """How the world looks to the built-in features: error kinds and how often the exact checks
    fire on each (a sample of 300 training solutions)."""
    import prm

    flat = [s for pool in w.train for s in pool]
    right = sum(bool(s.solution.answer_correct) for s in flat) / len(flat)
    kinds = {k: sum(s.kind == k for s in flat) / len(flat) for k in ERROR_KINDS}
    rng = random.Random(0)
    fired: dict[str, list[bool]] = {}
    for s in rng.sample(flat, min(300, len(flat))):
        for i, found in enumerate(prm.check_solution(s.solution.problem, list(s.solution.steps))):
            if s.first_error == -1 or i < s.first_error:
                where = "sound steps"
            elif i == s.first_error:
                where = f"first errors: {s.kind}"
            else:
                where = "steps after the first error"
            fired.setdefault(where, []).append(bool(found))
    print(
        f"world (seed {w.seed}): {right:.0%} of samples reach the right answer; first errors: "
        + ", ".join(f"{k} {v:.0%} of samples" for k, v in kinds.items())
        + f" (mix {'/'.join(f'{x:g}' for x in w.mix)}); exact checks fire on "
        + ", ".join(f"{k} {sum(v) / len(v):.0%} ({len(v)})" for k, v in sorted(fired.items()))
    )


def run_world(
    args: argparse.Namespace, options: Options, workdir: Path, variant: str
) -> dict[str, Any]:
    started = Clock()
    w = make_world(args, variant)
    pools = world_pools(w, k=args.pool // 2)
    describe_world(w, pools)
    h = Harness(
        pools, options, workdir / variant,
        labeller=lambda seed: noisy_labels(pools, noise=options.noise, seed=seed),
    )  # fmt: skip
    for seed in options.seeds:
        h.uniform(seed)
        h.run(h.trained_selector(seed), options.strategies, seed, key="bow selector")
        print(f"{variant}: seed {seed} done at {started.seconds():.0f} s", flush=True)
    return report(h, WORLDS[variant][0], ["bow selector"], started)


def run_phase1(args: argparse.Namespace, options: Options, workdir: Path) -> dict[str, Any]:
    started = Clock()
    pools = phase1_pools(shared_data(), k=4, limit=args.phase1_limit)
    human = [tuple(s.labels or ()) for s in pools.flat]
    o = replace(options, noise=0.0)
    h = Harness(pools, o, workdir / "phase1", labeller=lambda seed: human)
    for seed in o.seeds:
        h.uniform(seed)
        h.run(h.trained_selector(seed), o.strategies, seed, key="bow selector")
        print(f"phase 1: seed {seed} done at {started.seconds():.0f} s", flush=True)
    return report(h, "PRM800K phase 1: real paths, real human ratings", ["bow selector"], started)


def run_served(
    args: argparse.Namespace, options: Options, workdir: Path, url: str, model: str
) -> dict[str, Any]:
    """The world labelled by a served PRM (``/pooling``), which is also a second selector."""
    from machines.endpoints import POOLING, Endpoint
    from machines.served import ServedPRM

    started = Clock()
    w = make_world(args)
    pools = world_pools(w, k=args.pool // 2)
    endpoint = Endpoint(
        name="served", kind=POOLING, base_url=url.rstrip("/"), models=(model,),
        key_env=args.served_key_env or "", timeout_s=300, max_concurrency=8,
    )  # fmt: skip
    with ServedPRM(endpoint, model, concurrency=4, retries=5, backoff_s=1.0) as served:
        train_scores = served.score([(s.problem, s.steps) for s in pools.flat])
        held_flat = [s for g in pools.held_out for s in g]
        held_scores = served.score([(s.problem, s.steps) for s in held_flat])
    labels = [tuple(p >= 0.5 for p in scores) for scores in train_scores]
    agree = statistics.mean(
        float(a == b) for s, lab in zip(pools.flat, labels, strict=True)
        for a, b in zip(s.labels or (), lab, strict=True)
    )  # fmt: skip
    print(f"served PRM {model}: agrees with the truth on {agree:.1%} of the world's steps")
    o = replace(options, noise=math.nan)
    h = Harness(pools, o, workdir / "served", labeller=lambda seed: labels)
    from prm.metrics import solution_score

    own = h.evaluator.of_scores([solution_score(p) for p in held_scores])
    print(f"the served PRM's own best-of-{pools.k} on the held-out problems: {own.mean():.3f}")
    probs = [np.asarray(p, dtype=float) for p in train_scores]
    for seed in o.seeds:
        h.uniform(seed)
        h.run(h.trained_selector(seed), o.strategies, seed, key="bow selector")
        h.run(h.selection("served PRM", probs, seed), o.strategies, seed, key="served PRM")
    return report(
        h, f"The world labelled by the served PRM {model}", ["bow selector", "served PRM"], started
    )


def run_map(args: argparse.Namespace, options: Options, workdir: Path) -> dict[str, Any]:
    """The selector-quality map: planted selectors of several qualities and the trained one."""
    from bench.al_selector_sweep import crossing

    started = Clock()
    w = make_world(args)
    pools = world_pools(w, k=args.pool // 2)
    describe_world(w, pools)
    h = Harness(
        pools, options, workdir / "map",
        labeller=lambda seed: noisy_labels(pools, noise=options.noise, seed=seed),
    )  # fmt: skip
    names = [f"planted sd {s:g}" for s in args.sigmas]
    for seed in options.seeds:
        h.uniform(seed)
        h.run(h.trained_selector(seed), options.strategies, seed, key="bow selector")
        for sigma, name in zip(args.sigmas, names, strict=True):
            probs, spread = planted(pools, sigma=sigma, seed=seed)
            h.run(h.selection(name, probs, seed, spread), options.strategies, seed, key=name)
        print(f"map: seed {seed} done at {started.seconds():.0f} s", flush=True)
    figures = report(h, "The selector-quality map", ["bow selector", *names], started)
    uniform = h.curves.acc[(UNIFORM, UNIFORM)]
    print(
        "\nwhere each strategy's slope ratio crosses 1.0x and 1.5x with the interval above 1 (the "
        "planted selectors, by measured AUROC; the trained bow selector placed among them)\n"
    )
    print(
        "| strategy | crosses 1.0x at AUROC | crosses 1.5x at AUROC | the ratios, by AUROC "
        "| bow selector |"
    )
    print("| --- | ---: | ---: | --- | --- |")
    crossings: dict[str, dict[str, Any]] = {}
    for strategy in options.strategies:
        points = []
        for name in names:
            r = slope_ratio(h.curves.acc[(name, strategy)], uniform, h.curves.ns)
            ok_low = r.low if r.unbounded <= 0.025 else -math.inf
            points.append((statistics.mean(h.curves.aurocs[name]), r.point, ok_low))
        points.sort()
        real = slope_ratio(h.curves.acc[("bow selector", strategy)], uniform, h.curves.ns)
        real_auroc = statistics.mean(h.curves.aurocs["bow selector"])
        crossings[strategy] = {
            "1.0x": crossing(points, 1.0),
            "1.5x": crossing(points, 1.5),
            "points": points,
        }
        listed = "; ".join(f"{a:.3f}: {r:.2f}x" for a, r, _ in points)
        print(
            f"| {strategy} | {crossings[strategy]['1.0x']} | {crossings[strategy]['1.5x']} | "
            f"{listed} | AUROC {real_auroc:.3f}: {real.cell()} |"
        )
    figures["crossings"] = crossings
    print("\n" + manager_sentence(crossings.get("convincing-wrong")), flush=True)
    return figures


def manager_sentence(cw: dict[str, Any] | None) -> str:
    """The map in one sentence, for convincing-wrong (PRM800K's rule)."""
    if cw is None:
        return "(convincing-wrong was not run)"
    points = cw["points"]
    for level in ("1.5x", "1.0x"):
        at = cw[level]
        if at != "not reached":
            x = float(at.removeprefix("<= "))
            above = [r for a, r, _ in points if a >= x]
            return (
                f"With a selector above AUROC {x:.2f}, PRM800K's rule buys about "
                f"{statistics.mean(above):.1f} times the labels (slope ratio over uniform "
                f"{min(above):.2f}-{max(above):.2f}x at AUROC {x:.2f}-{points[-1][0]:.2f} in this "
                "world)."
            )
    ratios = [r for _, r, _ in points]
    return (
        f"With a selector of AUROC {points[0][0]:.2f} to {points[-1][0]:.2f}, PRM800K's rule "
        f"bought about {statistics.mean(ratios):.1f} times the labels by the paper's measure "
        f"(slope ratio over uniform {min(ratios):.2f}-{max(ratios):.2f}x, no interval wholly "
        "above 1 from any AUROC on): no reliable gain over ordering uniformly in this world."
    )


# -- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--map", action="store_true", help="the selector-quality map")
    parser.add_argument("--quick", action="store_true", help="a smaller world: a few minutes")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--ns", type=int, nargs="+", default=[2, 4, 8, 16], help="N per problem (2 4 8 16)"
    )
    parser.add_argument("--problems", type=int, default=400, help="training problems (world)")
    parser.add_argument("--held-out", type=int, default=200, help="held-out problems (world)")
    parser.add_argument("--pool", type=int, default=64, help="samples per problem (world)")
    parser.add_argument("--world-seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.05, help="labeller's step-label flips")
    parser.add_argument(
        "--mix", type=float, nargs=3, help=f"the main world's mix of error kinds ({MIX})"
    )
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    parser.add_argument("--sigmas", type=float, nargs="+", default=list(SIGMAS))
    parser.add_argument(
        "--pools", nargs="+", choices=[*WORLDS, "phase1"],
        help="which pools to run (default: all of them; with --served, none besides it)",
    )  # fmt: skip
    parser.add_argument("--phase1-limit", type=int, default=None, help="fewer phase 1 problems")
    parser.add_argument(
        "--served", nargs=2, metavar=("URL", "MODEL"),
        help="a PRM served on vLLM's /pooling API: it labels the world and selects",
    )  # fmt: skip
    parser.add_argument("--served-key-env", help="the environment variable holding its key")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    if args.quick:
        args.problems, args.held_out = min(args.problems, 80), min(args.held_out, 40)
        args.sigmas = args.sigmas[::2]
        args.phase1_limit = args.phase1_limit or 200
    if args.pools is None:
        args.pools = [] if args.served else [*WORLDS, "phase1"]
    served = args.served or (
        (os.environ["STEPWISE_ABLATION_SERVED_URL"], os.environ["STEPWISE_ABLATION_SERVED_MODEL"])
        if os.environ.get("STEPWISE_ABLATION_SERVED_URL")
        else None
    )

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    import django

    django.setup()  # learning.strategies: the app's own selection rules
    import torch

    torch.set_num_threads(1)
    options = Options(ns=sorted(args.ns), seeds=args.seeds, strategies=args.strategies,
                      noise=args.noise)  # fmt: skip
    started = Clock()
    print(
        f"PRM800K's ablation ({'map' if args.map else 'slopes'}): seeds {args.seeds}, N "
        f"{options.ns}; {os.cpu_count()} CPUs, load {load_text()}",
        flush=True,
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="stepwise-prm800k-ablation-") as tmp:
        work = Path(tmp)
        if args.map:
            results.append(run_map(args, options, work))
        else:
            if served:
                results.append(run_served(args, options, work, *served))
            for variant in WORLDS:
                if variant in args.pools:
                    results.append(run_world(args, options, work, variant))
            if "phase1" in args.pools:
                results.append(run_phase1(args, options, work))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    print(f"\ntotal {started.minutes()}; load {load_text()}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()

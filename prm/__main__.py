"""``python -m prm``: train, evaluate and score process reward models from the command line.

    python -m prm train --data EXPORT --out DIR [--backbone bow|minilm|hf:PATH] [--epochs N]
                        [--seed S] [--batch-size B] [--lr LR] [--set key=value ...]
    python -m prm eval  --model DIR --data EXPORT [--split test|validation|train|all] [--json]
    python -m prm score --model DIR --data FILE --out SCORES.jsonl [--aggregate product|min|last]
    python -m prm ensemble --model DIR1 --model DIR2 --data EXPORT --out DIR
    python -m prm bestofn --model DIR [--orm DIR] --data FILE [--split test|...|all] [--json]

``train --objective outcome`` trains an outcome reward model (every step labelled with the final
answer's correctness; rows need ``answer_correct``) with the same backbones.

EXPORT is a `trl` export (JSONL or Parquet rows of prompt/completions/labels) or PRM800K JSONL.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _options(pairs: list[str]) -> dict[str, Any]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {pair!r}")
        out[key.replace("-", "_")] = _value(value)
    return out


def cmd_train(args: argparse.Namespace) -> None:
    if not args.data.exists():  # before importing torch: a typo should fail fast
        raise FileNotFoundError(f"no such data file: {args.data}")
    from prm.training import TrainConfig, train

    overrides = {
        k: v
        for k, v in {
            "epochs": args.epochs,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "device": args.device,
            "version": args.version,
            "cache_dir": args.cache_dir,
            "workers": args.workers,
        }.items()
        if v is not None
    }
    config = TrainConfig(
        backbone=args.backbone,
        objective=args.objective,
        options=_options(args.set),
        seed=args.seed,
        holdout=not args.no_holdout,
        progress=not args.quiet,
        **overrides,
    )
    metrics = train(args.data, args.out, config)
    print(
        f"saved {metrics['checkpoint']} (version {metrics['version']}): "
        f"{metrics['train_items']} training items from {metrics['train_problems']} problems, "
        f"best epoch {metrics['best_epoch']}, "
        + (
            f"validation AUROC {metrics['validation_auroc']:.4f}, "
            if metrics["validation_auroc"] is not None
            else ""
        )
        + f"training {metrics['train_seconds']:.1f} s (+{metrics['prepare_seconds']:.1f} s "
        f"preparing) on {metrics['threads']} threads, {metrics['device']}"
    )


def cmd_eval(args: argparse.Namespace) -> None:
    from prm.evaluation import evaluate, format_report
    from prm.loader import load

    scorer = load(args.model, device=args.device)
    started = time.perf_counter()
    result = evaluate(
        scorer, args.data, split=args.split, bootstrap=args.bootstrap, cache_dir=args.cache_dir
    )
    result["seconds"] = round(time.perf_counter() - started, 2)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    name = scorer.config["backbone"]["name"]
    title = f"model {args.model} ({name}, version {scorer.version})"
    print(format_report(result, title=title))


def cmd_score(args: argparse.Namespace) -> None:
    from prm.data import read_dataset
    from prm.loader import load
    from prm.metrics import aggregate

    scorer = load(args.model, device=args.device)
    dataset = read_dataset(args.data)
    started = time.perf_counter()
    probs = scorer.score(dataset.solutions)
    seconds = time.perf_counter() - started
    with open(args.out, "w", encoding="utf-8") as fh:
        for s, p in zip(dataset.solutions, probs, strict=True):
            row = {"prompt": s.problem, "step_scores": p, "score": aggregate(p, args.aggregate)}
            fh.write(json.dumps(row) + "\n")
    n = sum(len(p) for p in probs)
    print(f"scored {len(probs)} solutions, {n} steps in {seconds:.1f} s -> {args.out}")


def cmd_bestofn(args: argparse.Namespace) -> None:
    if not args.data.exists():
        raise FileNotFoundError(f"no such data file: {args.data}")
    from prm.bestofn import evaluate_models, format_curve
    from prm.loader import load

    scorer = load(args.model, device=args.device)
    models: dict[str, Any] = {"PRM (product)": (scorer, "product"), "PRM (min)": (scorer, "min")}
    if args.orm:
        models["ORM"] = (load(args.orm, device=args.device), "last")
    result = evaluate_models(models, args.data, split=args.split, samples=args.samples)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(format_curve(result))


def cmd_ensemble(args: argparse.Namespace) -> None:
    from prm.ensemble import build_ensemble

    result = build_ensemble(args.model, args.data, args.out)
    members = ", ".join(f"{a:.4f}" for a in result["member_validation_auroc"])
    weights = ", ".join(f"{w:.3f}" for w in result["weights"])
    print(
        f"saved {args.out} (version {result['version']}): validation AUROC "
        f"{result['validation_auroc']:.4f} (members {members}; weights {weights})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m prm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a PRM on an export")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--backbone", default="bow", help="bow, minilm or hf:PATH")
    p.add_argument("--epochs", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--device")
    p.add_argument("--version", help="checkpoint version (default: sha256 of the weights)")
    p.add_argument("--no-holdout", action="store_true", help="train on every problem")
    p.add_argument(
        "--cache-dir",
        help="keep prepared features here between runs (bow: featurised steps; minilm: "
        "frozen-layer outputs); default $PRM_CACHE_DIR",
    )
    p.add_argument("--workers", type=int, help="bow: featurising processes (default: CPUs)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="backbone option, e.g. --set finetune_layers=2 --set context=previous",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--objective",
        default="process",
        choices=["process", "outcome"],
        help="process: each step's label (a PRM); outcome: the final answer's correctness (ORM)",
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "bestofn", help="best-of-N accuracy against N: PRM, ORM, majority, random, oracle"
    )
    p.add_argument("--model", type=Path, required=True, help="the PRM checkpoint")
    p.add_argument("--orm", type=Path, help="an outcome model (train --objective outcome)")
    p.add_argument("--data", type=Path, required=True, help="rows with answer and answer_correct")
    p.add_argument("--split", default="test", choices=["test", "validation", "train", "all"])
    p.add_argument("--samples", type=int, default=256, help="N-subsets per problem at most")
    p.add_argument("--device")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bestofn)

    p = sub.add_parser("eval", help="metrics of a checkpoint on held-out problems")
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--split", default="test", choices=["test", "validation", "train", "all"])
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--device")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cache-dir", help="bow: featurised steps kept by `train --cache-dir`")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("ensemble", help="combine checkpoints, weights fitted on validation")
    p.add_argument("--model", type=Path, action="append", required=True)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(func=cmd_ensemble)

    p = sub.add_parser("score", help="score every solution in a file")
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--aggregate", default="product", choices=["product", "min", "last"])
    p.add_argument("--device")
    p.set_defaults(func=cmd_score)

    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (FileNotFoundError, ValueError) as exc:
        sys.exit(f"prm: {exc}")


if __name__ == "__main__":
    main()

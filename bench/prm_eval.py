"""The PRM's closing evaluation, end to end: import, export, train, evaluate, baseline, throughput.

Every step runs through the project's own entry points, in its own process, as a user would:

1. ``manage.py import_solutions .../phase1_train.trajectories.jsonl --format prm800k-trajectories``
   into a campaign (idempotent: a second run adds nothing), on whatever ``DATABASE_URL`` says;
2. ``manage.py export_dataset --format trl --neutral positive`` (neutral counts as positive, a
   path is cut after its first negative step, every rated alternative is its own row);
3. ``python -m prm train`` for each model (``--model NAME=BACKBONE[,key=value...]``), skipped when
   the checkpoint exists and was trained on this very export (``--retrain`` to force);
4. the ensemble of the trained models when ``--ensemble`` (what ``python -m prm ensemble`` does,
   in this process: weights fitted on the validation split);
5. in this process: the TF-IDF + logistic regression baseline (``bench.prm_baseline``) and
   ``prm.evaluate`` of each checkpoint on the held-out test problems (threshold for first-error
   F1 chosen on validation), then scoring throughput on fresh, all-distinct steps.

It prints one table and writes it with everything else to ``OUT/results.json``. Nothing here looks
at the test split before the final evaluation: epochs, calibration, thresholds and ensemble weights
all come from validation.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/stepwise_prm \\
    nice python -m bench.prm_eval --out var/prm_eval \\
        --model bow=bow --model minilm=minilm,finetune_layers=2 --ensemble
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.prm_common import ROOT, require, shared_data

PHASE1 = Path("prm800k_phase1_human_labels") / "phase1_train.trajectories.jsonl"
DEFAULT_MODELS = ("bow=bow", "minilm=minilm,finetune_layers=2")
# Fresh steps per throughput run: enough for a stable figure in well under a minute.
THROUGHPUT_STEPS = {"bow": 200_000, "minilm": 2_000, "hf": 500, "ensemble": 2_000}


def run(cmd: list[str], *, env: dict | None = None) -> float:
    """Run a command in the repository root, echo it, fail loudly, return its wall time."""
    print("$ " + " ".join(cmd), flush=True)
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, env=env)
    return time.perf_counter() - started


def parse_model(spec: str) -> tuple[str, str, list[str]]:
    """``NAME=BACKBONE[,key=value...]`` -> (name, backbone, ["key=value", ...]).

    Keys are backbone options (``finetune_layers=1``) or training settings (``epochs=2``,
    ``lr=1e-3``, ``batch_size=64``).
    """
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise SystemExit(f"--model expects NAME=BACKBONE[,key=value...], got {spec!r}")
    backbone, *options = rest.split(",")
    for option in options:
        if "=" not in option:
            raise SystemExit(f"--model {spec!r}: option {option!r} is not key=value")
    return name, backbone, options


TRAIN_KEYS = ("epochs", "lr", "batch_size", "weight_decay", "head_lr", "patience")


def _value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def up_to_date(checkpoint: Path, sha: str, backbone: str, options: list[str], seed: int) -> bool:
    """Whether ``checkpoint`` was trained on this export with this backbone, options and seed."""
    path = checkpoint / "config.json"
    if not path.is_file():
        return False
    config = json.loads(path.read_text())
    described, train = config.get("backbone", {}), config.get("train_config", {})
    if config.get("data", {}).get("sha256") != sha or train.get("backbone") != backbone:
        return False
    if config.get("seed") != seed:
        return False
    for option in options:
        key, _, value = option.partition("=")
        key = key.replace("-", "_")
        have = train.get(key) if key in TRAIN_KEYS else described.get(key)
        if have != _value(value):
            return False
    return True


def train_command(export: Path, target: Path, backbone: str, options: list[str], seed: int):
    """``python -m prm train`` for one model; training settings become flags, the rest --set."""
    cmd = [sys.executable, "-m", "prm", "train", "--data", str(export), "--out", str(target),
           "--backbone", backbone, "--seed", str(seed), "--quiet"]  # fmt: skip
    for option in options:
        key, _, value = option.partition("=")
        key = key.replace("-", "_")
        if key in ("epochs", "lr", "batch_size"):
            cmd += ["--" + key.replace("_", "-"), value]
        elif key in TRAIN_KEYS:
            raise SystemExit(f"{key} cannot be set from the command line")
        else:
            cmd += ["--set", option]
    return cmd


def conditions() -> dict:
    load1, load5, load15 = os.getloadavg()
    return {
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "load_average": [round(load1, 2), round(load5, 2), round(load15, 2)],
        "prm_num_threads": os.environ.get("PRM_NUM_THREADS"),
        "database": os.environ.get("DATABASE_URL", "sqlite (default)").split("@")[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "prm_eval")
    parser.add_argument("--campaign", default="prm800k-phase1")
    parser.add_argument("--src", type=Path, help="default: $STEPWISE_SHARED_DATA/" + str(PHASE1))
    parser.add_argument("--model", action="append", help="NAME=BACKBONE[,key=value...]")
    parser.add_argument("--ensemble", action="store_true", help="also stack the trained models")
    parser.add_argument("--retrain", action="store_true", help="train even if up to date")
    parser.add_argument("--skip-import", action="store_true", help="use OUT's existing export")
    parser.add_argument("--cache-dir", help="minilm frozen-layer cache (default OUT/cache)")
    parser.add_argument("--throughput", type=int, default=1, help="0 to skip the throughput runs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    out: Path = args.out.resolve()
    models_dir = out / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    export = out / "phase1_trl.jsonl"
    python = sys.executable
    results: dict = {"conditions_start": conditions(), "models": {}}

    # 1-2: through the app
    if not args.skip_import:
        src = require(args.src or shared_data() / PHASE1)
        results["import_seconds"] = run(
            [python, "manage.py", "import_solutions", str(src), "--campaign", args.campaign,
             "--format", "prm800k-trajectories", "--no-grade"]
        )  # fmt: skip
        results["export_seconds"] = run(
            [python, "manage.py", "export_dataset", "--campaign", args.campaign, "--format",
             "trl", "--neutral", "positive", "--no-progress", "--out", str(export)]
        )  # fmt: skip
    require(export)

    from prm.data import read_dataset, sha256_file

    sha = sha256_file(export)
    results["export"] = {"path": str(export), "sha256": sha}

    # 3: train each model in its own process, with the CLI
    specs = [parse_model(m) for m in (args.model or DEFAULT_MODELS)]
    for name, backbone, options in specs:
        target = models_dir / name
        if not args.retrain and up_to_date(target, sha, backbone, options, args.seed):
            print(f"{name}: up to date ({target})")
            continue
        cmd = train_command(export, target, backbone, options, args.seed)
        if backbone == "minilm":
            cmd += ["--cache-dir", args.cache_dir or str(out / "cache")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = run(cmd)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        results["models"].setdefault(name, {})["train_process"] = {
            "wall_seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 1),
            "peak_rss_mb_of_any_child_so_far": round(after.ru_maxrss / 1024),
        }
    checkpoints = [(name, models_dir / name) for name, _, _ in specs]
    remember_logits()
    if args.ensemble and len(checkpoints) >= 2:
        # What `python -m prm ensemble` runs, in this process so that each member scores the
        # validation and test steps once (a MiniLM pass over them costs minutes on 2 cores).
        from prm.ensemble import build_ensemble

        target = models_dir / "ensemble"
        print(f"ensemble of {', '.join(name for name, _ in checkpoints)} -> {target}")
        fitted = build_ensemble([path for _, path in checkpoints], export, target)
        print(
            f"  validation AUROC {fitted['validation_auroc']:.4f} (members "
            + ", ".join(f"{a:.4f}" for a in fitted["member_validation_auroc"])
            + "; weights "
            + ", ".join(f"{w:.3f}" for w in fitted["weights"])
            + ")"
        )
        results["ensemble_fit"] = fitted
        checkpoints.append(("ensemble", target))

    # 5: baseline and evaluation on the same held-out problems
    import prm
    from bench.prm_baseline import baseline, report, row_probs
    from bench.prm_throughput import solutions as fresh_solutions
    from prm.evaluation import evaluate, format_report

    dataset = read_dataset(export)
    test = dataset.split("test")
    started = time.perf_counter()
    base = baseline(dataset)
    base_seconds = time.perf_counter() - started
    probs = row_probs(base["model"], base["vectorizer"], test)
    print(report("TF-IDF + LR (step alone)", test, probs, base["threshold"]))
    base_eval = _baseline_metrics(test, probs, base["threshold"])
    base_eval["train_seconds"] = round(base_seconds, 1)
    base_eval["C"] = base["C"]
    batch = fresh_solutions(THROUGHPUT_STEPS["bow"], data=export) if args.throughput else []
    flat = [step for _, steps in batch for step in steps]
    if flat:
        started = time.perf_counter()
        base["model"].predict_proba(base["vectorizer"].transform(flat))
        base_eval["steps_per_second"] = len(flat) / (time.perf_counter() - started)
    results["baseline"] = base_eval

    for name, path in checkpoints:
        scorer = prm.load(path)
        result = evaluate(scorer, dataset, split="test", seed=0)
        print(format_report(result, title=f"\n{name} ({path})"))
        entry = results["models"].setdefault(name, {})
        entry["eval"] = result
        metrics = scorer.config.get("metrics", {})
        entry["backbone"] = scorer.config["backbone"]
        entry["best_epoch"] = metrics.get("best_epoch")
        entry["validation_auroc"] = metrics.get("validation_auroc")
        entry["train_seconds"] = metrics.get("train_seconds")
        entry["prepare_seconds"] = metrics.get("prepare_seconds")
        entry["threads"] = metrics.get("threads")
        if args.throughput:
            kind = scorer.config["backbone"]["name"]
            batch = fresh_solutions(THROUGHPUT_STEPS.get(kind, 1000), data=export)
            with fresh_logits():
                scorer.score(batch[:20])  # warm up
                started, cpu = time.perf_counter(), time.process_time()
                scorer.score(batch)
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu
            n = sum(len(steps) for _, steps in batch)
            entry["throughput"] = {
                "steps": n,
                "seconds": round(seconds, 2),
                "cpu_seconds": round(cpu, 2),
                "threads": prm.runtime_threads(),
                "steps_per_second": n / seconds,
            }

    results["models"] = {name: results["models"][name] for name, _ in checkpoints}
    results["conditions_end"] = conditions()
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    print("\n" + table(results))
    print(f"\nwritten {out / 'results.json'}")


_MEMO: dict = {}
_REMEMBER = [True]


def remember_logits() -> None:
    """Each checkpoint (by its weights' sha256) scores a given solution once in this process.

    ``prm.evaluate`` scores validation then test, the ensemble its members on both: without this
    the MiniLM members would encode the same steps three times. Scores are deterministic, so a
    remembered logit is the logit. The throughput runs bypass it (``fresh_logits``).
    """
    from prm.scoring import Scorer, as_pair

    original = Scorer.logits
    if getattr(original, "remembers", False):
        return

    def logits(self, solutions, *, batch_size=None, workers=1):
        pairs = [as_pair(s) for s in solutions]
        if not _REMEMBER[0]:
            return original(self, pairs, batch_size=batch_size, workers=workers)
        model = self.config.get("weights_sha256") or self.version
        keys = [(model, problem, tuple(steps)) for problem, steps in pairs]
        todo = list({k: None for k in keys if k not in _MEMO})
        if todo:
            computed = original(self, [(k[1], k[2]) for k in todo], batch_size=batch_size)
            _MEMO.update(zip(todo, computed, strict=True))
        return [_MEMO[k] for k in keys]

    logits.remembers = True
    Scorer.logits = logits


class fresh_logits:
    def __enter__(self) -> None:
        _REMEMBER[0] = False

    def __exit__(self, *exc) -> None:
        _REMEMBER[0] = True


def _baseline_metrics(test, probs, threshold) -> dict:
    from prm.data import unique_steps
    from prm.metrics import auroc, bootstrap_auroc, first_error_scores

    p, y, groups = unique_steps(test, probs)
    low, high = bootstrap_auroc(y, p, groups, n=1000, seed=0)
    fe = first_error_scores(probs, [s.first_error for s in test], threshold)
    return {
        "problems": len(set(groups)),
        "steps": len(y),
        "auroc": auroc(y, p),
        "auroc_ci95": [low, high],
        "accuracy": float(((p >= 0.5) == y).mean()),
        "first_error": {**fe, "threshold": threshold},
    }


def table(results: dict) -> str:
    """The figures as a Markdown table (what the README shows)."""
    header = ("model", "step AUROC (95% CI)", "accuracy", "first-error F1", "train time")
    rows = [
        "| " + " | ".join(header) + " | scoring steps/s |",
        "| --- " * (len(header) + 1) + "|",
    ]
    b = results["baseline"]
    rows.append(
        f"| TF-IDF + LR (baseline) | {b['auroc']:.3f} ({b['auroc_ci95'][0]:.3f}-"
        f"{b['auroc_ci95'][1]:.3f}) | {b['accuracy']:.3f} | {b['first_error']['f1']:.3f} | "
        f"{b['train_seconds']:.0f} s (C grid) | "
        + (f"{b['steps_per_second']:,.0f}" if "steps_per_second" in b else "-")
        + " |"
    )
    for name, m in results["models"].items():
        if "eval" not in m:
            continue
        e = m["eval"]
        low, high = e["auroc_ci95"]
        if m.get("train_seconds") is not None:
            train = f"{m['train_seconds'] + (m.get('prepare_seconds') or 0):.0f} s"
        else:
            train = "(stacking)"
        speed = m.get("throughput", {}).get("steps_per_second")
        rows.append(
            f"| {name} | {e['auroc']:.3f} ({low:.3f}-{high:.3f}) | {e['accuracy']:.3f} | "
            f"{e['first_error']['f1']:.3f} | {train} | "
            + (f"{speed:,.0f}" if speed else "-")
            + " |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    main()

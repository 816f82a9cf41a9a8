"""`prm train` at PRM800K's size: wall time, CPU time and peak RSS at a million step labels, cold
and with a warm feature cache, and the held-out AUROC, for this checkout and the previous code.

The training file comes from PRM800K phase 1's real human labels in ``../shared/data``, copied
and perturbed to a million labels with every copy on its original's side of the split
(``bench/prm_train_data.py`` says exactly how); the 89 test problems stay real and unchanged.
Each training run is its own process (``python -m prm train``, run in-process by a small
wrapper that reports its own peak RSS and CPU time and that of the featurising processes it
forked). Runs, one after the other, with the load average before and after each:

1. this checkout, cold (an empty ``--cache-dir``);
2. this checkout, warm (the same file, the cache from run 1);
3. this checkout, warm, 2% more labels (a larger file whose first rows are the same: what an
   active-learning run after new labels sees);
4. the previous code (``--before DIR``: a checkout of the previous commit, e.g.
   ``git worktree add /work/old-train main``), which has no feature cache: run once.

Then the test-split step AUROC with its 95% interval (bootstrap over problems) of each model,
all evaluated by this checkout's ``prm.evaluate``.

    python -m bench.prm_train --before /work/old-train [--labels 1000000] [--out DIR]
    python -m bench.prm_train --labels 100000 --skip-before       # a quicker look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.prm_common import ROOT, shared_data
from bench.prm_train_data import PHASE1
from bench.prm_train_data import write as write_data

# Runs ``python -m prm ARGS`` in this process (so that RUSAGE_SELF is the training process) and
# prints its resource use as the last line.
WRAPPER = """
import json, resource, runpy, sys, time
sys.argv = ["prm", *sys.argv[1:]]
started = time.perf_counter()
runpy.run_module("prm", run_name="__main__", alter_sys=True)
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print("RUSAGE " + json.dumps({
    "wall_s": round(time.perf_counter() - started, 1),
    "cpu_s": round(me.ru_utime + me.ru_stime, 1),
    "children_cpu_s": round(kids.ru_utime + kids.ru_stime, 1),
    "peak_rss_mb": round(me.ru_maxrss / 1024),
    "children_peak_rss_mb": round(kids.ru_maxrss / 1024),
}))
"""


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def train_run(checkout: Path, data: Path, out: Path, *, cache: Path | None, label: str) -> dict:
    """One `prm train` in its own process, from ``checkout``; its figures and checkpoint."""
    shutil.rmtree(out, ignore_errors=True)
    args = [sys.executable, "-c", WRAPPER, "train", "--data", str(data), "--out", str(out)]
    args += ["--quiet"] + (["--cache-dir", str(cache)] if cache else [])
    load_before = _load()
    started = time.perf_counter()
    done = subprocess.run(args, cwd=checkout, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{label}: prm train failed ({done.returncode}):\n{done.stderr[-3000:]}")
    usage = json.loads(done.stdout.strip().splitlines()[-1].removeprefix("RUSAGE "))
    metrics = json.loads((out / "config.json").read_text())["metrics"]
    result = {
        "run": label,
        "checkout": str(checkout),
        "wall_s": round(wall, 1),
        "load_before": load_before,
        "load_after": _load(),
        **{k: v for k, v in usage.items() if k != "wall_s"},
        "prepare_s": metrics.get("prepare_seconds"),
        "train_s": metrics.get("train_seconds"),
        "train_items": metrics.get("train_items"),
        "best_epoch": metrics.get("best_epoch"),
        "epochs_run": len({h["epoch"] for h in metrics.get("history", [])}),
        "validation_auroc": metrics.get("validation_auroc"),
        "prepare": metrics.get("prepare", {}),
        "checkpoint": str(out),
    }
    print(_line(result), flush=True)
    return result


def _line(r: dict) -> str:
    p = r["prepare"]
    cache = (
        f", {p['featurised']:,} items featurised / {p['from_cache']:,} from the cache" if p else ""
    )
    return (
        f"{r['run']}: {r['wall_s']:.0f} s wall, CPU {r['cpu_s']:.0f} s "
        f"(+{r['children_cpu_s']:.0f} s in featurising processes), peak RSS "
        f"{r['peak_rss_mb']:,} MB (featurising processes {r['children_peak_rss_mb']:,} MB); "
        f"preparing {r['prepare_s']:.0f} s{cache}, training {r['train_s']:.0f} s "
        f"({r['epochs_run']} epochs started, best {r['best_epoch']}); load {r['load_before']} "
        f"-> {r['load_after']}"
    )


def test_auroc(checkpoint: str, data: Path) -> dict:
    """Step AUROC on the test split's distinct steps, 95% bootstrap interval over problems."""
    import prm
    from prm.data import Dataset, read_dataset

    dataset = read_dataset(data)
    test = Dataset(dataset.split("test"), dataset.source)
    result = prm.evaluate(prm.load(checkpoint), test, split="test", bootstrap=1000)
    return {k: result[k] for k in ("auroc", "auroc_ci95", "problems", "steps", "positive_rate")}


def describe_data(path: Path) -> dict:
    from prm.data import SPLITS, read_dataset, split_of
    from prm.items import RowIndex

    dataset = read_dataset(path)
    problems = {s.problem for s in dataset.solutions}
    return {
        "rows": len(dataset.solutions),
        "labels": sum(len(s.labels) for s in dataset.solutions),
        "distinct_items": len(RowIndex.build(dataset.solutions)),
        "problems": {k: sum(1 for p in problems if split_of(p) == k) for k in SPLITS},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench_prm_train")
    parser.add_argument("--before", type=Path, help="a checkout of the previous code")
    parser.add_argument("--skip-before", action="store_true")
    parser.add_argument("--data", type=Path, help="an existing `trl` file instead of building one")
    args = parser.parse_args(argv)
    if not args.skip_before and args.before is None:
        parser.error("--before DIR (a checkout of the previous commit) or --skip-before")
    if args.before is not None and not (args.before / "prm" / "__main__.py").is_file():
        sys.exit(f"--before {args.before}: not a Stepwise checkout (no prm/__main__.py)")

    args.out.mkdir(parents=True, exist_ok=True)
    more = int(args.labels * 1.02)
    if args.data:
        data, data_more = args.data, None
    else:
        source = shared_data() / PHASE1
        if not source.is_file():
            sys.exit(
                f"missing {source}: this benchmark builds its training file from PRM800K phase 1 "
                "in ../shared/data (set STEPWISE_SHARED_DATA to that folder, or pass --data)"
            )
        data = args.out / f"train-{args.labels}.jsonl"
        data_more = args.out / f"train-{more}.jsonl"
        for path, n in ((data, args.labels), (data_more, more)):
            if not path.is_file():
                counts = write_data(path, n)
                print(f"built {path}: {counts}")
    print(f"data {data}: {describe_data(data)}")
    print(f"machine: {os.cpu_count()} CPUs, load {_load()}", flush=True)

    cache = args.out / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    models = args.out / "models"
    runs = [
        train_run(ROOT, data, models / "after-cold", cache=cache, label="after, cold cache"),
        train_run(ROOT, data, models / "after-warm", cache=cache, label="after, warm cache"),
    ]
    if data_more is not None:
        runs.append(
            train_run(
                ROOT, data_more, models / "after-more", cache=cache, label="after, +2% labels"
            )
        )
    if not args.skip_before:
        runs.append(train_run(args.before, data, models / "before", cache=None, label="before"))
        print("before, warm cache: none (the previous code has no feature cache: same as cold)")

    print(f"\nheld-out AUROC (test split of {data.name}; load {_load()}):", flush=True)
    for r in runs:
        if r["run"] == "after, +2% labels":
            continue  # another training set
        r["test"] = test_auroc(r["checkpoint"], data)
        low, high = r["test"]["auroc_ci95"]
        print(
            f"  {r['run']}: {r['test']['auroc']:.4f} (95% CI {low:.4f}-{high:.4f}) on "
            f"{r['test']['steps']:,} steps of {r['test']['problems']} problems; validation "
            f"{r['validation_auroc']:.4f}",
            flush=True,
        )
    cold, warm = runs[0], runs[1]
    same = (
        json.loads(Path(cold["checkpoint"], "config.json").read_text())["version"]
        == json.loads(Path(warm["checkpoint"], "config.json").read_text())["version"]
    )
    print(f"cold and warm trained the same weights: {same}")
    (args.out / "results.json").write_text(json.dumps(runs, indent=2) + "\n")
    print(f"wrote {args.out / 'results.json'}")


if __name__ == "__main__":
    main()

"""Featurising before and after a change, interleaved in one process: CPU per step and the ratio.

On a shared virtual machine the same cold rescoring has taken 43 s and 84 s within the hour, so
two benchmark runs one after the other measure the hour more than the change. This compares the
``bow`` featurising of the working tree's ``prm`` with that of ``prm`` at another revision, both
loaded in one process (the other revision's copy renamed ``prm_before``), run in turn several
times on the same synthetic solutions (``bench/synthetic.py``, the rescoring benchmark's kind),
each time in ``--workers`` forked processes as a cold rescoring featurises. It prints each run's
CPU seconds, the medians, the ratio of each pair and whether the features are identical.

    python -m bench.featurise_ab --before c27e656                  # 30,000 solutions, 4 pairs
    python -m bench.featurise_ab --before HEAD~3 --solutions 5000 --pairs 2
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import io
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHUNKS_PER_WORKER = 4  # as prm.batch_scoring cuts a cold run's solutions

_RENAME = re.compile(r"\b(from|import) prm\b|\"prm\.")


def install_before(revision: str, into: Path) -> str:
    """``prm`` at ``revision`` as the package ``prm_before`` under ``into``; returns its name."""
    blob = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "prm"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as archive:
        archive.extractall(into, filter="data")
    (into / "prm").rename(into / "prm_before")
    for path in (into / "prm_before").rglob("*.py"):
        text = path.read_text()
        path.write_text(
            _RENAME.sub(lambda m: f"{m[1]} prm_before" if m[1] else '"prm_before.', text)
        )
    sys.path.insert(0, str(into))
    return "prm_before"


def solutions(n: int) -> list[tuple[int, str, str, list[str]]]:
    from bench.synthetic import records

    return [
        (i, "-", r["question"]["problem"], list(r["question"]["pre_generated_steps"]))
        for i, r in enumerate(records(n, seed=0, labelled=False))
    ]


_SIDES: dict[str, tuple] = {}  # package -> (backbone, Features); caches start empty in each fork
_CURRENT = ""


def _load(package: str) -> None:
    bow = importlib.import_module(f"{package}.backbones.bow")
    cache = importlib.import_module(f"{package}.feature_cache")
    importlib.import_module(f"{package}.latex").load_parser()
    _SIDES[package] = (bow.BowBackbone(), cache.Features)


def _build(chunk: list) -> tuple[float, str]:
    backbone, features = _SIDES[_CURRENT]
    t = time.process_time()
    built = features.build(backbone, chunk)
    seconds = time.process_time() - t
    digest = hashlib.sha256(built.starts.tobytes())
    for name in sorted(built.bags):
        for array in built.bags[name]:
            digest.update(name.encode() + array.tobytes())
    return seconds, digest.hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare against")
    parser.add_argument("--solutions", type=int, default=30_000)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    global _CURRENT

    with tempfile.TemporaryDirectory() as tmp:
        sides = [install_before(args.before, Path(tmp)), "prm"]
        for package in sides:
            _load(package)
        rows = solutions(args.solutions)
        steps = sum(len(r[3]) for r in rows)
        size = -(-len(rows) // (args.workers * CHUNKS_PER_WORKER))
        chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
        print(
            f"{len(rows):,} synthetic solutions, {steps:,} steps; {args.workers} processes; "
            f"before = {args.before}, after = the working tree"
        )
        cpu: dict[str, list[float]] = {p: [] for p in sides}
        digests: dict[str, list[str]] = {}
        for k in range(args.pairs):
            for package in sides if k % 2 == 0 else sides[::-1]:
                _CURRENT = package
                t = time.perf_counter()
                with multiprocessing.get_context("fork").Pool(args.workers) as pool:
                    results = pool.map(_build, chunks, chunksize=1)
                cpu[package].append(sum(seconds for seconds, _ in results))
                digests[package] = [d for _, d in results]
                print(
                    f"  pair {k + 1} {'before' if package != 'prm' else 'after '}: "
                    f"{cpu[package][-1]:6.1f} CPU s ({cpu[package][-1] / steps * 1e6:5.1f} us a "
                    f"step), {time.perf_counter() - t:5.1f} s wall, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    before, after = cpu[sides[0]], cpu["prm"]
    ratios = [b / a for b, a in zip(before, after, strict=True)]
    print(
        f"median CPU per step: before {statistics.median(before) / steps * 1e6:.1f} us, "
        f"after {statistics.median(after) / steps * 1e6:.1f} us; before / after per pair: "
        f"{', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f})"
    )
    same = digests[sides[0]] == digests["prm"]
    print(f"features identical before and after: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()

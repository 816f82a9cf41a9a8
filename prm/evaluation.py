"""``prm eval``: a checkpoint's metrics on the held-out problems of a labelled file.

- step-level AUROC (95% bootstrap interval over problems) and accuracy at P(correct) >= 0.5, on the
  split's unique steps (the shared prefix of PRM800K alternatives counts once);
- ProcessBench-style first-error F1 over the split's rows, at the threshold chosen on the same
  file's validation split (or the checkpoint's own, when the file has no validation rows);
- best-of-N accuracy by product, min and last aggregation against majority vote and random, for
  problems with several rows whose final answer is graded (``answer_correct``).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from prm.backbones import BowBackbone
from prm.data import Dataset, Solution, read_dataset, split_of, unique_steps
from prm.metrics import (
    AGGREGATIONS,
    aggregate,
    auroc,
    best_first_error_threshold,
    best_of_n,
    bootstrap_auroc,
    first_error_scores,
)
from prm.scoring import Scorer


def evaluate(
    scorer: Scorer,
    data: str | Path | Dataset,
    *,
    split: str = "test",
    bootstrap: int = 1000,
    seed: int = 0,
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """All metrics of ``scorer`` on ``split`` of ``data`` (``"all"`` for every row).

    ``cache_dir``: the training cache of featurised items (``prm.item_cache``), for ``bow``:
    the validation rows (for the threshold) were featurised by training, and the test rows are
    kept for the next evaluation.
    """
    dataset = read_dataset(data) if isinstance(data, str | Path) else data
    cache_dir = cache_dir or os.environ.get("PRM_CACHE_DIR") or None
    labelled = [s for s in dataset.solutions if s.labels is not None]
    rows = labelled if split == "all" else [s for s in labelled if _in(s, split)]
    if not rows:
        raise ValueError(f"no labelled rows in split {split!r}")
    probs = step_scores_of(scorer, rows, cache_dir)
    p, y, groups = unique_steps(rows, probs)
    low, high = bootstrap_auroc(y, p, groups, n=bootstrap, seed=seed)
    result: dict[str, Any] = {
        "split": split,
        "problems": len(set(groups)),
        "rows": len(rows),
        "steps": len(y),
        "positive_rate": float(y.mean()),
        "auroc": auroc(y, p),
        "auroc_ci95": [low, high],
        "accuracy": float(((p >= 0.5) == y).mean()),
    }

    val_rows = [s for s in labelled if _in(s, "validation")] if split != "validation" else []
    if val_rows:
        val_probs = step_scores_of(scorer, val_rows, cache_dir)
        threshold = best_first_error_threshold(val_probs, [s.first_error for s in val_rows])
        source = "validation split of this file"
    else:
        threshold = scorer.config.get("thresholds", {}).get("first_error", 0.5)
        source = "checkpoint"
    first = first_error_scores(probs, [s.first_error for s in rows], threshold)
    result["first_error"] = {**first, "threshold": threshold, "threshold_from": source}

    graded: dict[str, list[tuple[Solution, list[float]]]] = defaultdict(list)
    for s, pr in zip(rows, probs, strict=True):
        if s.answer_correct is not None:
            graded[s.problem].append((s, pr))
    groups_n = [g for g in graded.values() if len(g) >= 2]
    if groups_n:
        bon = {}
        for how in AGGREGATIONS:
            cands = [
                [(aggregate(pr, how), _norm(s.answer), bool(s.answer_correct)) for s, pr in g]
                for g in groups_n
            ]
            bon[how] = best_of_n(cands)
        result["best_of_n"] = {
            "problems": len(groups_n),
            "mean_candidates": float(np.mean([len(g) for g in groups_n])),
            **{how: bon[how]["prm"] for how in AGGREGATIONS},
            "majority": bon["product"]["majority"],
            "random": bon["product"]["random"],
            "oracle": bon["product"]["oracle"],
        }
    return result


def step_scores_of(
    scorer: Scorer, rows: list[Solution], cache_dir: str | Path | None
) -> list[list[float]]:
    """Each row's calibrated step scores. For backbones with a walker (``bow``) through the
    training path: each distinct step featurised once, from the cache where it has them (never
    compacting it: training decides what it keeps); the same features and network as
    ``scorer.score``."""
    backbone = scorer.backbone
    if not isinstance(backbone, BowBackbone):
        return scorer.score(rows)
    from prm.item_cache import ItemCache
    from prm.items import default_workers
    from prm.scoring import calibrate
    from prm.trainset import packed_sets

    cache = ItemCache(cache_dir, backbone) if cache_dir else None
    (packed,), _ = packed_sets(
        backbone, [rows], cache=cache, workers=default_workers(), compact=False
    )
    _, _, per_row = packed.calibration_points(backbone, device=scorer.device)
    return [calibrate(z, scorer.calibration).tolist() for z in per_row]


def _in(s: Solution, split: str) -> bool:
    return split_of(s.problem) == split


def _norm(answer: str | None) -> str | None:
    return None if answer is None else " ".join(answer.split()).strip("$ .")


def format_report(result: dict[str, Any], *, title: str = "") -> str:
    """The metrics as the few lines ``prm eval`` prints."""
    lines = [title] if title else []
    lines.append(
        f"split {result['split']}: {result['problems']} problems, {result['rows']} rows, "
        f"{result['steps']} unique steps ({result['positive_rate']:.1%} non-negative)"
    )
    low, high = result["auroc_ci95"]
    lines.append(f"step AUROC      {result['auroc']:.4f}  (95% CI {low:.4f}-{high:.4f})")
    lines.append(f"step accuracy   {result['accuracy']:.4f}  (P(correct) >= 0.5)")
    fe = result["first_error"]
    lines.append(
        f"first-error F1  {fe['f1']:.4f}  (erroneous {fe['accuracy_erroneous']:.4f} of "
        f"{fe['erroneous']}, error-free {fe['accuracy_error_free']:.4f} of {fe['error_free']}; "
        f"threshold {fe['threshold']:.4f} from {fe['threshold_from']})"
    )
    bon = result.get("best_of_n")
    if bon:
        lines.append(
            f"best-of-N       {bon['problems']} problems, {bon['mean_candidates']:.1f} graded "
            f"candidates each: product {bon['product']:.4f}, min {bon['min']:.4f}, "
            f"last {bon['last']:.4f}; majority {bon['majority']:.4f}, random "
            f"{bon['random']:.4f}, oracle {bon['oracle']:.4f}"
        )
    else:
        lines.append("best-of-N       skipped: no problem has several rows with a graded answer")
    return "\n".join(lines)

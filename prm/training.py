"""Training a PRM: held-out split by problem, early stopping on validation, calibration, checkpoint.

Only problems in the ``train`` split are trained on; ``validation`` chooses the epoch, fits the
calibration and the first-error threshold; ``test`` is never touched here (``prm eval`` reports on
it). With ``holdout=False`` (the app's active learning, which wants every label) all rows are
trained on for the configured epochs and nothing is selected.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from prm.backbones import Backbone, Item, build_backbone
from prm.data import Dataset, Solution, read_dataset
from prm.item_cache import ItemCache
from prm.items import default_workers
from prm.metrics import auroc, best_first_error_threshold, first_error_scores
from prm.runtime import configure_threads, pick_device, seed_everything
from prm.scoring import calibrate, fit_calibration, save_checkpoint
from prm.trainset import listed_sets, packed_sets

PRM_VERSION = "1.0"

OBJECTIVES = ("process", "outcome")
# How each objective's checkpoint scores a whole solution by default (``prm.bestofn``).
SOLUTION_AGGREGATE = {"process": "product", "outcome": "last"}

DEFAULTS: dict[str, dict[str, Any]] = {
    "bow": {"epochs": 8, "batch_size": 128, "lr": 3e-4, "weight_decay": 0.0},
    "minilm": {"epochs": 3, "batch_size": 32, "lr": 1e-4, "weight_decay": 0.01},
    "hf": {"epochs": 3, "batch_size": 8, "lr": 5e-5, "weight_decay": 0.0},
}


@dataclass
class TrainConfig:
    """How to train. ``None`` fields take the backbone's default (``DEFAULTS``).

    ``options`` go to the backbone (e.g. ``{"finetune_layers": 2}`` for minilm).
    """

    backbone: str = "bow"
    options: dict[str, Any] = field(default_factory=dict)
    objective: str = "process"  # or "outcome": an ORM on final-answer correctness alone
    epochs: int | None = None
    batch_size: int | None = None
    lr: float | None = None
    weight_decay: float | None = None
    head_lr: float = 1e-3  # minilm: the new head and bags learn faster than pretrained layers
    seed: int = 0
    patience: int = 2
    holdout: bool = True
    version: str | None = None
    device: str | None = None
    progress: bool = True
    # Prepared features kept here between trainings (default $PRM_CACHE_DIR): bow's featurised
    # items (prm.item_cache), minilm's frozen-layer outputs
    cache_dir: str | None = None
    # Processes that featurise bow's items (default $PRM_WORKERS, else the usable CPUs, max 8)
    workers: int | None = None

    def resolved(self) -> TrainConfig:
        family = "hf" if self.backbone.startswith("hf") else self.backbone
        defaults = DEFAULTS.get(family, DEFAULTS["bow"])
        values = dataclasses.asdict(self)
        for name, value in defaults.items():
            if values[name] is None:
                values[name] = value
        return TrainConfig(**values)


def outcome_rows(solutions: Iterable[Solution]) -> list[Solution]:
    """The rows an outcome reward model trains on: each solution with a graded final answer, every
    step labelled with that answer's correctness (the step labels, if any, are ignored)."""
    return [
        dataclasses.replace(s, labels=(bool(s.answer_correct),) * len(s.steps))
        for s in solutions
        if s.answer_correct is not None and s.steps
    ]


def _memoised(backbone: Backbone, cache: dict):
    """``backbone.prepare`` remembering its items by (problem, steps) in ``cache``.

    For a caller that trains many models on subsets of one pool in one process
    (``bench/active_learning.py``): each solution is prepared once. Only valid for backbones
    with the same settings. (Across processes and runs, ``cache_dir`` does this on disk.)
    """
    prepare = backbone.prepare

    def cached(problem: str, steps) -> list[Item]:
        key = (problem, tuple(steps))
        items = cache.get(key)
        if items is None:
            items = cache[key] = prepare(problem, steps)
        return items

    return cached


class LazyAdam(torch.optim.Optimizer):
    """Adam for sparse embedding gradients that touches only the rows a batch used.

    torch's SparseAdam does the same maths through sparse-tensor operations that cost about half
    a second per batch on a 2^18-row table on this CPU; plain indexing costs milliseconds.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.coalesce()
                rows, values = grad.indices()[0], grad.values()
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                m = state["m"][rows].mul_(beta1).add_(values, alpha=1 - beta1)
                v = state["v"][rows].mul_(beta2).addcmul_(values, values, value=1 - beta2)
                state["m"][rows], state["v"][rows] = m, v
                t = state["step"]
                step = group["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t)
                p[rows] -= step * m / (v.sqrt() + group["eps"])


class _Optimizer:
    """AdamW for dense weights and SparseAdam for sparse embedding bags, stepped together."""

    def __init__(self, backbone: Backbone, cfg: TrainConfig) -> None:
        sparse_names = {
            f"{name}.weight"
            for name, module in backbone.named_modules()
            if isinstance(module, torch.nn.EmbeddingBag | torch.nn.Embedding) and module.sparse
        }
        encoder, new, sparse = [], [], []
        for name, p in backbone.named_parameters():
            if not p.requires_grad:
                continue
            if name in sparse_names:
                sparse.append(p)
            elif name.startswith("encoder.") or name.startswith("model."):
                encoder.append(p)
            else:
                new.append(p)
        head_lr = cfg.head_lr if encoder else cfg.lr
        self.parts: list[torch.optim.Optimizer] = []
        candidates = ({"params": new, "lr": head_lr}, {"params": encoder, "lr": cfg.lr})
        groups = [g for g in candidates if g["params"]]
        if groups:
            self.parts.append(torch.optim.AdamW(groups, weight_decay=cfg.weight_decay))
        if sparse:
            self.parts.append(LazyAdam(sparse, lr=head_lr))

    def zero_grad(self) -> None:
        for opt in self.parts:
            opt.zero_grad(set_to_none=True)

    def step(self) -> None:
        for opt in self.parts:
            opt.step()


def train(
    data: str | Path | Dataset | Iterable[Solution],
    out_dir: str | Path,
    config: TrainConfig | dict | None = None,
    *,
    prepare_cache: dict | None = None,
    **overrides: Any,
) -> dict:
    """Train a PRM on ``data`` (a `trl`/PRM800K file, a Dataset, or Solutions) into ``out_dir``.

    Returns the metrics also written into the checkpoint's config.json. ``prepare_cache`` (a dict
    the caller keeps between calls) remembers the backbone's prepared items of each solution.
    """
    if isinstance(config, dict):
        config = TrainConfig(**config)
    cfg = dataclasses.replace(config or TrainConfig(), **overrides).resolved()
    if isinstance(data, str | Path):
        dataset = read_dataset(data)
    elif isinstance(data, Dataset):
        dataset = data
    else:
        dataset = Dataset(list(data), source={"path": None})
    if cfg.objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, not {cfg.objective!r}")
    if cfg.objective == "outcome":
        rows = outcome_rows(dataset.solutions)
        if not rows:
            raise ValueError("no solution with a graded final answer to train an outcome model on")
        dataset = Dataset(rows, dataset.source)
    dataset = Dataset([s for s in dataset.solutions if s.labels is not None], dataset.source)

    threads = configure_threads(cfg.backbone)
    device = pick_device(cfg.device)
    seed_everything(cfg.seed)
    started = time.perf_counter()
    backbone = build_backbone(cfg.backbone, **cfg.options).to(device)

    if cfg.holdout:
        train_rows, val_rows = dataset.split("train"), dataset.split("validation")
    else:
        train_rows, val_rows = list(dataset.solutions), []
    if not train_rows:
        raise ValueError("no training rows (is every problem in the validation/test split?)")
    cache_dir = cfg.cache_dir or os.environ.get("PRM_CACHE_DIR") or None
    prepare_stats: dict = {}
    if hasattr(backbone, "walker"):  # one step per item, bags of ids: flat arrays
        prepare = _memoised(backbone, prepare_cache) if prepare_cache is not None else None
        cache = ItemCache(cache_dir, backbone) if cache_dir and prepare is None else None
        workers = cfg.workers if cfg.workers is not None else default_workers()
        (train_set, val_set), prepare_stats = packed_sets(
            backbone, [train_rows, val_rows], cache=cache, workers=workers, prepare=prepare
        )
        prior = backbone.fit_prior_packed(train_set.packed)
    else:
        if prepare_cache is not None:
            backbone.prepare = _memoised(backbone, prepare_cache)  # type: ignore[method-assign]
        train_set, val_set = listed_sets(backbone, [train_rows, val_rows])
        prior = backbone.fit_prior(train_set.items) if hasattr(backbone, "fit_prior") else {}
        backbone.prepare_training(
            train_set.items + val_set.items, device=device, cache_dir=cache_dir
        )
    val_labels = val_set.labels
    select = len(val_labels) > 0 and 0 < val_labels.sum() < len(val_labels)
    prepared_seconds = time.perf_counter() - started

    optimizer = _Optimizer(backbone, cfg)
    generator = torch.Generator().manual_seed(cfg.seed)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    history: list[dict] = []
    best_state, best_auroc, best_epoch, stale = None, -1.0, 0, 0
    train_started = time.perf_counter()
    for epoch in range(1, cfg.epochs + 1):
        backbone.train()
        order = torch.randperm(len(train_set), generator=generator).numpy()
        total, count = 0.0, 0
        bar = tqdm(
            range(0, len(order), cfg.batch_size),
            desc=f"epoch {epoch}/{cfg.epochs}",
            unit="batch",
            disable=not cfg.progress,
            leave=False,
        )
        for start in bar:
            idx = order[start : start + cfg.batch_size]
            batch = {k: v.to(device) for k, v in train_set.batch(idx).items()}
            target = train_set.targets(idx).to(device)
            logits = backbone(batch)
            loss = loss_fn(logits.float(), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(target)
            count += len(target)
            bar.set_postfix(loss=f"{total / count:.4f}")
        record: dict[str, Any] = {"epoch": epoch, "train_loss": total / max(count, 1)}
        if select:
            z = val_set.logits(backbone, device=device)
            record["validation_auroc"] = auroc(val_labels, z)
            record["validation_loss"] = float(
                loss_fn(torch.tensor(z), torch.tensor(val_labels, dtype=torch.float64))
            )
            if record["validation_auroc"] > best_auroc:
                best_auroc, best_epoch, stale = record["validation_auroc"], epoch, 0
                best_state = {k: v.clone() for k, v in backbone.saved_state().items()}
            else:
                stale += 1
        history.append(record)
        if cfg.progress:
            tqdm.write(
                "epoch {epoch}: train loss {train_loss:.4f}".format(**record)
                + (
                    f", validation AUROC {record['validation_auroc']:.4f}"
                    if "validation_auroc" in record
                    else ""
                )
            )
        if select and stale >= cfg.patience:
            break
    train_seconds = time.perf_counter() - train_started
    if best_state is not None:
        backbone.load_saved_state(best_state)
    else:
        best_epoch = len(history)

    # Calibration and the first-error threshold come from validation rows, as scoring computes
    # them (for minilm the full model, not the training cache), so they match what `load` gives.
    calibration_set = val_set if select else train_set
    calibration_rows = calibration_set.rows
    z, y, row_logits = calibration_set.calibration_points(backbone, device=device)
    calibration = fit_calibration(z, y)
    probs = [calibrate(r, calibration) for r in row_logits]
    first_errors = [s.first_error for s in calibration_rows]
    threshold = best_first_error_threshold(probs, first_errors)
    fit_metrics = first_error_scores(probs, first_errors, threshold)

    metrics = {
        "history": history,
        "best_epoch": best_epoch,
        "train_rows": len(train_rows),
        "train_items": len(train_set),
        "train_problems": len({s.problem for s in train_rows}),
        "validation_rows": len(val_rows),
        "validation_items": len(val_set),
        "validation_problems": len({s.problem for s in val_rows}),
        "validation_auroc": best_auroc if select else None,
        "first_error_threshold_fitted_on": "validation" if select else "train",
        "first_error_f1_at_fit": fit_metrics["f1"],
        "prepare_seconds": round(prepared_seconds, 2),
        "prepare": prepare_stats,
        "train_seconds": round(train_seconds, 2),
        "threads": threads,
        "device": str(device),
    }
    if prior:
        metrics["check_prior"] = prior
    written = save_checkpoint(
        out_dir,
        backbone,
        {
            "prm_version": PRM_VERSION,
            "version": cfg.version,
            "label_policy": dataset.source.get("label_policy"),
            "data": {k: v for k, v in dataset.source.items() if k != "label_policy"},
            "seed": cfg.seed,
            "train_config": {
                k: v
                for k, v in dataclasses.asdict(cfg).items()
                if k not in ("progress", "device", "cache_dir", "workers")
            },
            "calibration": calibration,
            "thresholds": {"first_error": threshold, "step": 0.5},
            "metrics": metrics,
        },
    )
    metrics["version"] = written["version"]
    metrics["checkpoint"] = str(Path(out_dir))
    if not math.isfinite(history[-1]["train_loss"]):
        raise FloatingPointError("training diverged (non-finite loss)")
    return metrics

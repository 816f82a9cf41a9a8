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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypedDict, TypeVar, overload, runtime_checkable

import torch
from torch.optim.optimizer import ParamsT
from tqdm import tqdm

from prm.backbones import Backbone, BowBackbone, Item, build_backbone
from prm.data import Dataset, Solution, read_dataset
from prm.item_cache import ItemCache
from prm.items import default_workers
from prm.metrics import auroc, best_first_error_threshold, first_error_scores
from prm.runtime import configure_threads, pick_device, seed_everything
from prm.scoring import calibrate, fit_calibration, save_checkpoint
from prm.trainset import TrainingSet, listed_sets, packed_sets

PRM_VERSION = "1.0"

OBJECTIVES = ("process", "outcome")
# How each objective's checkpoint scores a whole solution by default (``prm.bestofn``).
SOLUTION_AGGREGATE = {"process": "product", "outcome": "last"}

DEFAULTS: dict[str, dict[str, Any]] = {
    # bow's epochs and batch size grow with the data: ``bow_epochs``, ``bow_batch_size``
    "bow": {"lr": 3e-4, "weight_decay": 0.0},
    "minilm": {"epochs": 3, "batch_size": 32, "lr": 1e-4, "weight_decay": 0.01},
    "hf": {"epochs": 3, "batch_size": 8, "lr": 5e-5, "weight_decay": 0.0},
}

# Validation every this many training items as well as after every epoch (``_fit``).
EVAL_ITEMS = 250_000


def bow_batch_size(items: int) -> int:
    """128 (what PRM800K phase 1's 33k items were tuned with) up to 100k items, doubling with
    each doubling of the data up to 1024 from 400k: an optimizer step costs about the same for
    128 or 1024 items (it touches the rows of a few embedding tables), so a small batch makes a
    million items an hour-long epoch, and on them 1024 selected a better model than 128
    (docs/prm.md, "Training at PRM800K's size")."""
    return int(128 * 2 ** min(3, max(0, int(math.log2(max(items, 1) / 50_000)))))


def bow_epochs(items: int) -> int:
    """At most 8 epochs, and no more than make 2M item visits (at least 2): with early stopping
    (validation every ``EVAL_ITEMS``) this is only a ceiling; without validation (``holdout``
    off) it is what a million items get."""
    return max(2, min(8, math.ceil(2_000_000 / max(items, 1))))


class SizedDefaults(TypedDict, total=False):
    """A family's defaults that depend on the number of training items."""

    epochs: Callable[[int], int]
    batch_size: Callable[[int], int]


SIZED: dict[str, SizedDefaults] = {"bow": {"epochs": bow_epochs, "batch_size": bow_batch_size}}

_T = TypeVar("_T")


def _required(value: _T | None, name: str) -> _T:
    """A ``TrainConfig`` field that ``resolved`` / ``sized`` have filled."""
    if value is None:
        raise ValueError(f"TrainConfig.{name} is not set (resolved() and sized() fill it)")
    return value


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
    patience: int = 2  # evaluations on validation without a better AUROC before stopping
    eval_every: int | None = None  # training items between evaluations (default EVAL_ITEMS)
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

    def sized(self, items: int) -> TrainConfig:
        """Fill the defaults that depend on the number of training items (``SIZED``)."""
        family = "hf" if self.backbone.startswith("hf") else self.backbone
        rules = SIZED.get(family, {})
        epochs, batch_size = self.epochs, self.batch_size
        if epochs is None and "epochs" in rules:
            epochs = rules["epochs"](items)
        if batch_size is None and "batch_size" in rules:
            batch_size = rules["batch_size"](items)
        if (epochs, batch_size) == (self.epochs, self.batch_size):
            return self
        return dataclasses.replace(self, epochs=epochs, batch_size=batch_size)


def outcome_rows(solutions: Iterable[Solution]) -> list[Solution]:
    """The rows an outcome reward model trains on: each solution with a graded final answer, every
    step labelled with that answer's correctness (the step labels, if any, are ignored)."""
    return [
        dataclasses.replace(s, labels=(bool(s.answer_correct),) * len(s.steps))
        for s in solutions
        if s.answer_correct is not None and s.steps
    ]


# Prepared items by (problem, steps), kept by a caller across trainings (``train``'s
# ``prepare_cache``).
PrepareCache = dict[tuple[str, tuple[str, ...]], list[Item]]


def _memoised(
    backbone: Backbone, cache: PrepareCache
) -> Callable[[str, Sequence[str]], list[Item]]:
    """``backbone.prepare`` remembering its items by (problem, steps) in ``cache``.

    For a caller that trains many models on subsets of one pool in one process
    (``bench/active_learning.py``): each solution is prepared once. Only valid for backbones
    with the same settings. (Across processes and runs, ``cache_dir`` does this on disk.)
    """
    prepare = backbone.prepare

    def cached(problem: str, steps: Sequence[str]) -> list[Item]:
        key = (problem, tuple(steps))
        items = cache.get(key)
        if items is None:
            items = cache[key] = prepare(problem, steps)
        return items

    return cached


@runtime_checkable
class _FitsPrior(Protocol):
    """A backbone with a prior fitted on its training items (the checks' starting weights)."""

    def fit_prior(self, items: Sequence[Item]) -> dict[str, float]: ...


class LazyAdam(torch.optim.Optimizer):
    """Adam for sparse embedding gradients that touches only the rows a batch used.

    torch's SparseAdam does the same maths through sparse-tensor operations that cost about half
    a second per batch on a 2^18-row table on this CPU; plain indexing costs milliseconds. The
    rows a batch touched are found by marking them in a table-sized mask (linear in the table,
    cheaper than sorting the batch's ids, which ``coalesce`` does and which was half of a step's
    time), and their gradients summed with ``index_add_``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

    @overload
    def step(self, closure: None = None) -> None: ...

    @overload
    def step(self, closure: Callable[[], float]) -> float: ...

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One update; ``closure`` (re-evaluating the loss, as torch's optimizers take it) is
        called first and its loss returned."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                ids, values = p.grad._indices()[0], p.grad._values()
                mark = torch.zeros(p.shape[0], dtype=torch.bool, device=p.device)
                mark[ids] = True
                rows = mark.nonzero().squeeze(1)
                where = (torch.cumsum(mark, 0) - 1)[ids]
                grad = values.new_zeros((len(rows), *values.shape[1:])).index_add_(0, where, values)
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                m = state["m"].index_select(0, rows).mul_(beta1).add_(grad, alpha=1 - beta1)
                v = (
                    state["v"]
                    .index_select(0, rows)
                    .mul_(beta2)
                    .addcmul_(grad, grad, value=1 - beta2)
                )
                state["m"].index_copy_(0, rows, m)
                state["v"].index_copy_(0, rows, v)
                t = state["step"]
                step = group["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t)
                p.index_add_(0, rows, m.div_(v.sqrt_().add_(group["eps"])), alpha=-step)
        return loss


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
        lr = _required(cfg.lr, "lr")
        head_lr = cfg.head_lr if encoder else lr
        self.parts: list[torch.optim.Optimizer] = []
        candidates = ({"params": new, "lr": head_lr}, {"params": encoder, "lr": lr})
        groups = [g for g in candidates if g["params"]]
        if groups:
            self.parts.append(
                torch.optim.AdamW(groups, weight_decay=_required(cfg.weight_decay, "weight_decay"))
            )
        if sparse:
            self.parts.append(LazyAdam(sparse, lr=head_lr))

    def zero_grad(self) -> None:
        for opt in self.parts:
            opt.zero_grad(set_to_none=True)

    def step(self) -> None:
        for opt in self.parts:
            opt.step()


def _fit(
    backbone: Backbone,
    train_set: TrainingSet,
    val_set: TrainingSet,
    cfg: TrainConfig,
    device: torch.device,
    select: bool,
) -> tuple[list[dict[str, Any]], float, float]:
    """Train; with ``select``, keep the weights of the best validation AUROC and stop after
    ``patience`` evaluations without a better one. Validation runs after every epoch and, on
    large sets, every ``eval_every`` training items as well, so a model whose best point comes
    within its first pass (a million labels) stops there instead of training two more epochs.
    Returns the history, the best point (in passes over the training set) and its AUROC."""
    optimizer = _Optimizer(backbone, cfg)
    epochs, batch_size = _required(cfg.epochs, "epochs"), _required(cfg.batch_size, "batch_size")
    generator = torch.Generator().manual_seed(cfg.seed)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    n = len(train_set)
    every = cfg.eval_every or EVAL_ITEMS
    history: list[dict[str, Any]] = []
    best_state, best_auroc, best_at, stale = None, -1.0, 0.0, 0
    seen = since = 0
    total, count = 0.0, 0
    val_labels = val_set.labels

    def evaluate(epoch: int, end: bool) -> bool:
        """Record a point of the history; True when training should stop."""
        nonlocal best_state, best_auroc, best_at, stale, since, total, count
        record: dict[str, Any] = {"epoch": epoch, "train_loss": total / max(count, 1)}
        at = float(epoch) if end else round(seen / n, 3)
        if not end:
            record["passes"] = at
        if select:
            z = val_set.logits(backbone, device=device)
            record["validation_auroc"] = auroc(val_labels, z)
            record["validation_loss"] = float(
                loss_fn(torch.tensor(z), torch.tensor(val_labels, dtype=torch.float64))
            )
            if record["validation_auroc"] > best_auroc:
                best_auroc, best_at, stale = record["validation_auroc"], at, 0
                best_state = {k: v.clone() for k, v in backbone.saved_state().items()}
            else:
                stale += 1
        history.append(record)
        if cfg.progress:
            where = f"epoch {epoch}" if end else f"epoch {epoch} ({at:.2f} passes)"
            tqdm.write(
                f"{where}: train loss {record['train_loss']:.4f}"
                + (
                    f", validation AUROC {record['validation_auroc']:.4f}"
                    if "validation_auroc" in record
                    else ""
                )
            )
        since, total, count = 0, 0.0, 0
        return select and stale >= cfg.patience

    stop = False
    for epoch in range(1, epochs + 1):
        backbone.train()
        order = torch.randperm(n, generator=generator).numpy()
        bar = tqdm(
            range(0, n, batch_size),
            desc=f"epoch {epoch}/{epochs}",
            unit="batch",
            disable=not cfg.progress,
            leave=False,
        )
        for start in bar:
            idx = order[start : start + batch_size]
            batch = {k: v.to(device) for k, v in train_set.batch(idx).items()}
            target = train_set.targets(idx).to(device)
            logits = backbone(batch)
            loss = loss_fn(logits.float(), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(target)
            count += len(target)
            seen += len(idx)
            since += len(idx)
            bar.set_postfix(loss=f"{total / count:.4f}")
            if select and since >= every and start + batch_size < n:
                stop = evaluate(epoch, end=False)
                backbone.train()
                if stop:
                    break
        if stop or evaluate(epoch, end=True):
            break
    if best_state is not None:
        backbone.load_saved_state(best_state)
    else:
        best_at = float(len(history) and history[-1]["epoch"])
    best = int(best_at) if best_at == int(best_at) else best_at
    return history, best, best_auroc


def train(
    data: str | Path | Dataset | Iterable[Solution],
    out_dir: str | Path,
    config: TrainConfig | dict[str, Any] | None = None,
    *,
    prepare_cache: PrepareCache | None = None,
    **overrides: Any,
) -> dict[str, Any]:
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
    prepare_stats: dict[str, Any] = {}
    train_set: TrainingSet
    val_set: TrainingSet
    if isinstance(backbone, BowBackbone):  # one step per item, bags of ids: flat arrays
        prepare = _memoised(backbone, prepare_cache) if prepare_cache is not None else None
        cache = ItemCache(cache_dir, backbone) if cache_dir and prepare is None else None
        workers = cfg.workers if cfg.workers is not None else default_workers()
        (packed_train, packed_val), prepare_stats = packed_sets(
            backbone, [train_rows, val_rows], cache=cache, workers=workers, prepare=prepare
        )
        prior = backbone.fit_prior_packed(packed_train.packed)
        train_set, val_set = packed_train, packed_val
    else:
        if prepare_cache is not None:
            # ignore: this backbone's prepare, memoised for this process (an instance attribute
            # over the method, which mypy compares with the unbound method)
            backbone.prepare = _memoised(  # type: ignore[method-assign, assignment]
                backbone, prepare_cache
            )
        listed_train, listed_val = listed_sets(backbone, [train_rows, val_rows])
        prior = backbone.fit_prior(listed_train.items) if isinstance(backbone, _FitsPrior) else {}
        backbone.prepare_training(
            listed_train.items + listed_val.items, device=device, cache_dir=cache_dir
        )
        train_set, val_set = listed_train, listed_val
    val_labels = val_set.labels
    select = len(val_labels) > 0 and 0 < val_labels.sum() < len(val_labels)
    prepared_seconds = time.perf_counter() - started

    cfg = cfg.sized(len(train_set))
    train_started = time.perf_counter()
    history, best_epoch, best_auroc = _fit(backbone, train_set, val_set, cfg, device, select)
    train_seconds = time.perf_counter() - train_started

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
        "best_epoch": best_epoch,  # passes over the training set (mid-epoch on large sets)
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

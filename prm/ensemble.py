"""Ensembles: several trained PRMs whose step logits are combined by weights fitted on validation.

Different backbones make different mistakes (hashed n-grams and structure vs a pretrained encoder),
so a weighted sum of their logits can rank steps better than either. The weights and a bias are a
logistic regression on the members' logits over the validation split's unique steps (stacking);
the test split is not touched. The ensemble is a checkpoint directory like any other::

    config.json        backbone {"name": "ensemble", "members": [...]}, weights, bias, metrics
    members/0/, 1/...  the member checkpoints, copied (so the directory stands alone)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prm.data import Dataset, read_dataset, unique_steps
from prm.metrics import auroc, best_first_error_threshold
from prm.scoring import (
    FORMAT,
    FORMAT_VERSION,
    Scorer,
    SolutionLike,
    as_pair,
    calibrate,
    load_model,
    read_config,
)


class EnsembleScorer(Scorer):
    """A :class:`Scorer` over member scorers: logit = bias + sum of weight x member logit."""

    def __init__(
        self, members: list[Scorer], config: dict[str, Any], directory: Path | None = None
    ) -> None:
        self.members = members
        self.config = config
        self.directory = directory
        self.device = members[0].device
        self.backbone = None  # type: ignore[assignment]

    def logits(
        self,
        solutions: Iterable[SolutionLike],
        *,
        batch_size: int | None = None,
        workers: int = 1,
    ) -> list[np.ndarray]:
        solutions = [as_pair(s) for s in solutions]
        parts = [m.logits(solutions, workers=workers) for m in self.members]
        weights, bias = self.config["weights"], self.config["bias"]
        return [
            bias + sum(w * part[j] for w, part in zip(weights, parts, strict=True))
            for j in range(len(solutions))
        ]

    def save(self, directory: str | Path) -> dict[str, Any]:
        if self.directory is None:
            raise ValueError("this ensemble was not loaded from a directory")
        directory = Path(directory)
        shutil.copytree(self.directory, directory, dirs_exist_ok=True)
        return self.config


def _fit_stack(x: np.ndarray, y: np.ndarray) -> tuple[list[float], float]:
    """Logistic regression of the labels on the members' logits (a few parameters, LBFGS)."""
    xt = torch.tensor(x, dtype=torch.float64)
    yt = torch.tensor(y, dtype=torch.float64)
    params = torch.zeros(x.shape[1] + 1, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        params[:-1] = 1.0 / x.shape[1]
    opt = torch.optim.LBFGS([params], max_iter=200, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        z = xt @ params[:-1] + params[-1]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, yt)
        loss.backward()
        return loss

    opt.step(closure)
    values = params.detach().tolist()
    return values[:-1], values[-1]


def build_ensemble(
    members: Sequence[str | Path], data: str | Path | Dataset, out_dir: str | Path
) -> dict[str, Any]:
    """Fit the members' weights on ``data``'s validation split and write the ensemble."""
    if len(members) < 2:
        raise ValueError("an ensemble needs at least two member checkpoints")
    dataset = read_dataset(data) if isinstance(data, str | Path) else data
    val = [s for s in dataset.split("validation") if s.labels is not None]
    if not val:
        raise ValueError("the data has no labelled rows in the validation split")
    scorers = [load_model(m, read_config(m)) for m in members]
    member_logits = [s.logits(val) for s in scorers]
    columns = [unique_steps(val, per_row)[0] for per_row in member_logits]
    labels = unique_steps(val, member_logits[0])[1]  # the same steps, in the same order, each time
    x = np.stack(columns, axis=1)
    weights, bias = _fit_stack(x, labels)
    combined = x @ np.array(weights) + bias
    row_logits = [
        bias + np.sum([w * m[j] for w, m in zip(weights, member_logits, strict=True)], axis=0)
        for j in range(len(val))
    ]
    identity = {"a": 1.0, "b": 0.0}
    threshold = best_first_error_threshold(
        [calibrate(z, identity) for z in row_logits], [s.first_error for s in val]
    )
    out = Path(out_dir)
    (out / "members").mkdir(parents=True, exist_ok=True)
    names = []
    for i, (path, scorer) in enumerate(zip(members, scorers, strict=True)):
        target = out / "members" / str(i)
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(path, target)
        names.append({"path": f"members/{i}", "version": scorer.version})
    metrics = {
        "validation_auroc": auroc(labels, combined),
        "member_validation_auroc": [auroc(labels, c) for c in columns],
        "validation_items": len(labels),
    }
    digest = hashlib.sha256(json.dumps([names, weights, bias], sort_keys=True).encode()).hexdigest()
    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "backbone": {"name": "ensemble", "members": names},
        "weights": weights,
        "bias": bias,
        "calibration": identity,
        "thresholds": {"first_error": threshold, "step": 0.5},
        "label_policy": scorers[0].config.get("label_policy"),
        "data": {k: v for k, v in dataset.source.items() if k != "label_policy"},
        "metrics": metrics,
        "version": digest[:12],
    }
    tmp = out / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, out / "config.json")
    return {**metrics, "weights": weights, "bias": bias, "version": config["version"]}


def load_ensemble(
    directory: Path, config: dict[str, Any], *, device: str | None = None
) -> EnsembleScorer:
    members = [
        load_model(directory / m["path"], read_config(directory / m["path"]), device=device)
        for m in config["backbone"]["members"]
    ]
    for member, expected in zip(members, config["backbone"]["members"], strict=True):
        if member.version != expected["version"]:
            raise ValueError(f"{directory}: member {expected['path']} is not the one fitted")
    return EnsembleScorer(members, config, directory)

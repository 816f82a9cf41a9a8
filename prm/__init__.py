"""The process reward model in plain PyTorch. No Django imports: it runs alone on a GPU box.

The app's API (torch is imported on first use, so ``import prm.data`` stays light)::

    import prm
    metrics = prm.train("export.jsonl", "var/prm/v3", backbone="bow", seed=0)
    scorer = prm.load("var/prm/v3")
    scorer.score([(problem, [step, ...]), ...])            # per-step P(correct)
    scorer.solution_scores(solutions, aggregate="product")  # or "min", "last"
    prm.evaluate(scorer, "export.jsonl")                     # held-out metrics
    prm.check_solution(problem, [step, ...])                 # per step, the checks that fired

The CLI is ``python -m prm train|eval|score`` (``--help``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Dataset",
    "Scorer",
    "Solution",
    "TrainConfig",
    "check_solution",
    "evaluate",
    "load",
    "read_dataset",
    "runtime_threads",
    "split_of",
    "train",
]

_LAZY = {
    "Dataset": "prm.data",
    "Solution": "prm.data",
    "read_dataset": "prm.data",
    "split_of": "prm.data",
    "TrainConfig": "prm.training",
    "train": "prm.training",
    "Scorer": "prm.scoring",
    "load": "prm.loader",
    "runtime_threads": "prm.runtime",
    "evaluate": "prm.evaluation",
    "check_solution": "prm.checks",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'prm' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

"""Loading any PRM checkpoint: one trained model (``prm.scoring``) or an ensemble of them
(``prm.ensemble``). ``prm.load`` is this."""

from __future__ import annotations

from pathlib import Path

from prm.ensemble import load_ensemble
from prm.scoring import Scorer, load_model, read_config


def load(directory: str | Path, *, device: str | None = None) -> Scorer:
    """A checkpoint directory (``prm.scoring``'s docstring) as a :class:`Scorer`."""
    config = read_config(directory)
    if config["backbone"]["name"] == "ensemble":
        return load_ensemble(Path(directory), config, device=device)
    return load_model(directory, config, device=device)

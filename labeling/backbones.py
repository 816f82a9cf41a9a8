"""Which PRM backbones a campaign may train: the operator's list, never a manager's path.

A campaign stores a backbone *name* (``al_backbone``). The operator lists the names the site
offers in ``STEPWISE_PRM_BACKBONES`` (default ``bow,minilm``); ``hf:NAME`` entries name a local
Hugging Face model folder directly under ``STEPWISE_MODEL_ROOT``. Managers pick from that list
(the campaign form and the API offer it as a choice). The worker turns the name into what ``prm``
loads only here, refusing anything not listed, any name that is a path, and any folder that
resolves outside the root (a symlink out of it included). Errors name the backbone, never a path
on the machine or a file's content.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

BUILTIN = ("bow", "minilm")
# A model folder's name: no separators, no dot-dot, nothing a shell or a URL would read twice.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


class BackboneRefused(ValueError):
    """The campaign's backbone is not one the operator offers, or its folder is unusable."""


def backbones_allowed() -> list[str]:
    """The backbone names offered to managers, in the operator's order."""
    raw = getattr(settings, "STEPWISE_PRM_BACKBONES", ",".join(BUILTIN))
    names = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    out: list[str] = []
    for name in (n.strip() for n in names):
        if name and name not in out and _well_formed(name):
            out.append(name)
    return out


def _well_formed(name: str) -> bool:
    if name in BUILTIN:
        return True
    return name.startswith("hf:") and bool(_NAME.fullmatch(name[3:]))


def backbone_choices() -> list[tuple[str, str]]:
    return [(name, name) for name in backbones_allowed()]


def model_root() -> Path:
    return Path(getattr(settings, "STEPWISE_MODEL_ROOT", Path(settings.VAR_DIR) / "models"))


def backbone_spec(name: str) -> str:
    """What ``prm.train`` is given for the backbone ``name``: ``bow``, ``minilm`` or
    ``hf:/absolute/folder`` under the model root. Raises :class:`BackboneRefused`."""
    name = name or "bow"
    allowed = backbones_allowed()
    if name not in allowed:
        raise BackboneRefused(
            f"backbone {name[:100]!r} is not offered on this site (STEPWISE_PRM_BACKBONES: "
            f"{', '.join(allowed) or 'none'}); choose one in the campaign's settings"
        )
    if name in BUILTIN:
        return name
    root = model_root().resolve()
    folder = (root / name[3:]).resolve()
    if not folder.is_relative_to(root) or folder == root:
        raise BackboneRefused(f"backbone {name!r}: its folder is outside STEPWISE_MODEL_ROOT")
    if not (folder / "config.json").is_file():
        raise BackboneRefused(
            f"backbone {name!r}: no model folder of that name (with a config.json) in "
            "STEPWISE_MODEL_ROOT"
        )
    return f"hf:{folder}"

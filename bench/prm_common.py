"""Shared bits of the PRM bench scripts: where the real data lives and how to say it is missing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def shared_data() -> Path:
    """``../shared/data`` beside the checkout (as in CI), or ``$STEPWISE_SHARED_DATA``."""
    return Path(os.environ.get("STEPWISE_SHARED_DATA") or ROOT.parent / "shared" / "data")


def require(path: Path) -> Path:
    if not path.exists():
        sys.exit(
            f"missing {path}: the PRM benchmarks read the real data in ../shared/data "
            "(set STEPWISE_SHARED_DATA to its folder)"
        )
    return path

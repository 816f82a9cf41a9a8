"""Imports: files of problems, solutions and step labels into a campaign.

``import_file(path, campaign=..., fmt=...)`` is the one entry point (the ``import_solutions``
command, the web upload and the round-trip tests call it). The formats are described in the
README's "Import formats" section and in the module of each.
"""

from __future__ import annotations

from .service import FORMATS, ImportResult, ImportValidationError, LineError, import_file

__all__ = ["FORMATS", "ImportResult", "ImportValidationError", "LineError", "import_file"]

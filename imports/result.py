"""What an import reports: an ``ImportResult`` of what it wrote, or an ``ImportValidationError``
naming every line (``LineError``) that keeps the file from being imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labeling.grading import GradingResult


@dataclass(frozen=True)
class LineError:
    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return ": ".join(p for p in (where, self.field, self.message) if p)


class ImportValidationError(Exception):
    """The file cannot be imported; ``errors`` says where and why. Nothing was written."""

    def __init__(self, errors: list[LineError], *, truncated: bool = False) -> None:
        self.errors = errors
        self.truncated = truncated
        text = "\n".join(str(e) for e in errors)
        if truncated:
            text += f"\n(stopped after {len(errors)} errors)"
        super().__init__(text)


@dataclass
class ImportResult:
    lines: int = 0
    problems_created: int = 0
    solutions_created: int = 0
    solutions_existing: int = 0  # already in the campaign before this import
    solutions_gold_applied: int = 0  # existing solutions given the file's kind and gold ratings
    steps_created: int = 0
    assignments_created: int = 0
    assignments_existing: int = 0  # label lines imported before (or twice in the file)
    step_labels_created: int = 0
    users_created: int = 0
    solutions_graded: int = 0
    grading: GradingResult | None = field(default=None, repr=False)
    seconds: float = 0.0

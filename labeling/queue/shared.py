"""What the queue's modules share: the plain-SQL helpers of the hot path, and the valid ratings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from django.db import connection

from labeling.models import Rating, StepLabel

_T = TypeVar("_T")

RATINGS = frozenset(Rating.values)


# The hot path (asking for work, submitting) reads with plain SQL: on the reference machine the
# ORM spends about 0.5 ms of CPU building each query, several times the query itself, and
# these run on every request of every annotator. Everything else uses the ORM.


def _for_update(*, of: str | None = None) -> str:
    """The row lock of a locking read on PostgreSQL; SQLite serialises writers instead.

    ``NO KEY UPDATE``: nothing here changes a key, so foreign-key checks of concurrent inserts
    (a new assignment of the solution, a label of the assignment) do not wait.
    """
    if connection.vendor != "postgresql":
        return ""
    return " FOR NO KEY UPDATE" + (f" OF {of}" if of else "")


def _first(rows: Iterable[_T]) -> _T | None:
    return next(iter(rows), None)


def human_completion_load(value) -> dict | None:
    """A ``StepLabel.human_completion`` value as read with plain SQL (text on some backends)."""
    return StepLabel._meta.get_field("human_completion").from_db_value(value, None, connection)

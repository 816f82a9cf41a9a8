"""What the queue's modules share: the plain-SQL helpers of the hot path, and the valid ratings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from django.db import connection
from django.db.models import Model

from labeling.models import Rating, StepLabel

_T = TypeVar("_T")
_M = TypeVar("_M", bound=Model)

RATINGS = frozenset(Rating.values)


# The hot path (asking for work, submitting) reads with plain SQL: on the reference machine the
# ORM spends about 0.5 ms of CPU building each query, several times the query itself, and
# these run on every request of every annotator. Everything else uses the ORM.


def for_update_clause(*, of: str | None = None) -> str:
    """The row lock of a locking read on PostgreSQL; SQLite serialises writers instead.

    ``NO KEY UPDATE``: nothing here changes a key, so foreign-key checks of concurrent inserts
    (a new assignment of the solution, a label of the assignment) do not wait.
    """
    if connection.vendor != "postgresql":
        return ""
    return " FOR NO KEY UPDATE" + (f" OF {of}" if of else "")


def _first(rows: Iterable[_T]) -> _T | None:
    return next(iter(rows), None)


def model_columns(model: type[Model], alias: str = "") -> str:
    """The model's concrete columns, in field order, for a plain SELECT that ``model_fetch``
    (or ``model_from_row``) reads back: ``a.id, a.campaign_id, ...`` with ``alias`` ``a``."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(f"{prefix}{f.column}" for f in model._meta.concrete_fields)


# (model, connection alias) -> each concrete field's attname and its database converters, as the
# ORM applies them (SQLite's booleans and times, JSON text): worked out once, not on every row.
_CONVERTERS: dict[tuple[type[Model], str], tuple[list[str], list[list]]] = {}


def _converters(model: type[Model]) -> tuple[list[str], list[list]]:
    key = (model, connection.alias)
    found = _CONVERTERS.get(key)
    if found is None:
        fields = model._meta.concrete_fields
        converters = []
        for field in fields:
            column = field.get_col(model._meta.db_table)
            converters.append(
                [
                    (convert, column)
                    for convert in connection.ops.get_db_converters(column)
                    + column.get_db_converters(connection)
                ]
            )
        found = _CONVERTERS[key] = ([f.attname for f in fields], converters)
    return found


def model_from_row(model: type[_M], values: Sequence) -> _M:
    """A model instance from its concrete columns' values (``model_columns``' order), converted
    as the ORM converts them; what ``Model.objects.raw`` does, for a fraction of its CPU."""
    names, converters = _converters(model)
    converted = []
    for value, field_converters in zip(values, converters, strict=True):
        for convert, column in field_converters:
            value = convert(value, column, connection)
        converted.append(value)
    return model.from_db(connection.alias, names, converted)


def model_fetch(
    model: type[_M], sql: str, params: Sequence | dict, *, extra: Sequence[str] = ()
) -> _M | None:
    """The first row of ``sql`` as a ``model`` instance (its columns first, in
    ``model_columns``' order, then one column for each name in ``extra``, set as attributes),
    or None when there is no row."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    n = len(row) - len(extra)
    instance = model_from_row(model, row[:n])
    for name, value in zip(extra, row[n:], strict=True):
        setattr(instance, name, value)
    return instance


def human_completion_load(value) -> dict | None:
    """A ``StepLabel.human_completion`` value as read with plain SQL (text on some backends)."""
    return StepLabel._meta.get_field("human_completion").from_db_value(value, None, connection)


def human_completion_from_text(text: str | None) -> dict | None:
    """PRM800K's ``human_completion`` object for a correction text, None for no text."""
    text = (text or "").strip()
    if not text:
        return None
    return {"text": text, "rating": None, "source": "human", "flagged": False}

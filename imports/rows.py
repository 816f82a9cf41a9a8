"""Fast bulk inserts for imports: ids chosen up front, rows written as plain tuples.

``bulk_create`` builds a model instance per row and cannot beat a few thousand solutions a second
with their steps and labels; an import writes millions of rows. Here the importer reserves primary
keys itself (so it can point steps at solutions and labels at steps without reading anything
back) and hands over tuples: PostgreSQL receives them through ``COPY``, other databases through
``executemany``. Columns the importer does not name get the model field's default, so a field
added to a model later still gets a valid value.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import DateTimeField, JSONField, Model


class TableRows:
    """One model's table as seen by the importer: the columns it fills, defaults for the rest.

    Rows are tuples in ``columns`` order. Datetime values are aware; JSON values are already
    serialised strings.
    """

    def __init__(self, model: type[Model], columns: Sequence[str]) -> None:
        fields = {f.attname: f for f in model._meta.concrete_fields}
        unknown = set(columns) - fields.keys()
        if unknown:
            raise ImproperlyConfigured(f"{model.__name__} has no fields {sorted(unknown)}")
        pk = model._meta.pk.attname
        rest = [f for f in fields.values() if f.attname not in columns and f.attname != pk]
        constants = []
        for f in rest:
            if f.has_default():
                value = f.get_default()
            elif f.null:
                value = None
            else:
                raise ImproperlyConfigured(f"{model.__name__}.{f.name} needs a value on import")
            if isinstance(f, JSONField):
                constants.append(None if value is None else json.dumps(value))
            else:
                constants.append(f.get_db_prep_save(value, connection))
        self.model = model
        self.name = model._meta.db_table
        self.columns = [fields[c].column for c in columns] + [f.column for f in rest]
        self.constants = tuple(constants)
        self._datetimes = [i for i, c in enumerate(columns) if isinstance(fields[c], DateTimeField)]

    def insert(self, rows: list[tuple]) -> int:
        """Write the rows; returns how many."""
        if not rows:
            return 0
        quote = connection.ops.quote_name
        cols = ", ".join(quote(c) for c in self.columns)
        consts = self.constants
        n = 0
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                sql = f"COPY {quote(self.name)} ({cols}) FROM STDIN"
                with cursor.cursor.copy(sql) as copy:
                    for row in rows:
                        copy.write_row(row + consts)
                        n += 1
                return n
            adapt = connection.ops.adapt_datetimefield_value
            marks = ", ".join(["%s"] * len(self.columns))
            batch = []
            for row in rows:
                if self._datetimes:
                    row = list(row)
                    for i in self._datetimes:
                        if isinstance(row[i], datetime):
                            row[i] = adapt(row[i])
                    row = tuple(row)
                batch.append(row + consts)
            cursor.executemany(f"INSERT INTO {quote(self.name)} ({cols}) VALUES ({marks})", batch)
            return len(batch)


class Ids:
    """Primary keys reserved ahead of the insert.

    PostgreSQL: drawn from the table's own identity sequence, so concurrent writers never collide.
    Elsewhere (SQLite): counted on from the current maximum; safe because SQLite lets one writer
    at a time hold the database (the import runs in one transaction, begun IMMEDIATE).
    """

    def __init__(self, model: type[Model]) -> None:
        self.table = model._meta.db_table
        self.pk = model._meta.pk.column
        self._next: int | None = None
        self._sequence: str | None = None

    def take(self, n: int) -> list[int]:
        if n == 0:
            return []
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                if self._sequence is None:
                    cursor.execute(
                        "SELECT pg_get_serial_sequence(%s, %s)",
                        [connection.ops.quote_name(self.table), self.pk],
                    )
                    self._sequence = cursor.fetchone()[0]
                cursor.execute(
                    "SELECT nextval(%s) FROM generate_series(1, %s)", [self._sequence, n]
                )
                return [row[0] for row in cursor.fetchall()]
            if self._next is None:
                quote = connection.ops.quote_name
                cursor.execute(f"SELECT MAX({quote(self.pk)}) FROM {quote(self.table)}")
                top = cursor.fetchone()[0] or 0
                if connection.vendor == "sqlite":
                    # AUTOINCREMENT never reuses ids of deleted rows: start past those too.
                    cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [self.table])
                    row = cursor.fetchone()
                    top = max(top, row[0] if row else 0)
                self._next = top + 1
        start, self._next = self._next, self._next + n
        return list(range(start, start + n))

"""The columns of the tables that raw SQL writes, declared once per table.

Raw SQL names the columns it writes: the queue's one-statement claim, the submit's INSERT of the
step labels, the benchmarks' loaders (``COPY``, ``INSERT ... SELECT``). A column that such a
statement leaves out must be one the database fills itself (a ``db_default``, NULL, the id's
sequence); otherwise the statement fails the day the column is added, far from the change that
added it (it happened: migration ``labeling.0012``). So each table's columns are declared once,
as a :class:`Columns`, split into those a raw INSERT must name (``required``) and those the
database fills (``filled``), and every raw INSERT builds its column list with
:meth:`Columns.insert`, which refuses a list that leaves out a required column or names one the
table does not have, at import time.

``tests/test_rules_columns.py`` holds every declaration to its model's concrete fields: a column
added to a model fails that test, naming the table, the column and what to do, rather than a
benchmark half an hour into its load. Nothing here imports Django: a loader that talks to
PostgreSQL through psycopg alone may use it.

The rows an import writes from Python go through ``imports.rows.TableRows`` instead, which reads
the model itself and fills every column it is not given with the field's default.
"""

from __future__ import annotations

from dataclasses import dataclass

# Every declaration, for the test that holds them to the models.
DECLARED: list[Columns] = []


class ColumnsError(ValueError):
    """A raw INSERT's column list that does not fit its table."""


@dataclass(frozen=True)
class Columns:
    """One table's columns: those a raw INSERT must name, and those the database fills."""

    table: str
    required: tuple[str, ...]
    filled: tuple[str, ...]

    def __post_init__(self) -> None:
        DECLARED.append(self)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.required) | frozenset(self.filled)

    def insert(self, *named: str) -> tuple[str, ...]:
        """``named``, checked: it names every required column and only columns of the table."""
        unknown = [c for c in named if c not in self.names]
        missing = [c for c in self.required if c not in named]
        if unknown or missing:
            problems = []
            if missing:
                problems.append(f"leaves out {', '.join(missing)} (no database default)")
            if unknown:
                problems.append(f"names {', '.join(unknown)}, which it does not have")
            raise ColumnsError(f"an INSERT into {self.table} {' and '.join(problems)}")
        return named

    def sql(self, *named: str) -> str:
        """:meth:`insert`'s columns as the list of an INSERT or a COPY."""
        return ", ".join(self.insert(*named))


# Django's user table (``django.contrib.auth``): the benchmarks' loaders create annotators in it.
USER = Columns(
    "auth_user",
    required=(
        "password",
        "is_superuser",
        "username",
        "first_name",
        "last_name",
        "email",
        "is_staff",
        "is_active",
        "date_joined",
    ),
    filled=("id", "last_login"),
)

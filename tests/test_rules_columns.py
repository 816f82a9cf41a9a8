"""The columns raw SQL writes, declared once per table (``common.columns``) and held here to the
models, so that a column added to a model fails this test instead of a benchmark's load or the
queue's claim in production."""

from __future__ import annotations

import importlib
from dataclasses import fields

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import NOT_PROVIDED

import annotators.columns
import labeling.columns
from common.columns import DECLARED, USER, Columns, ColumnsError
from exports import reader
from labeling.models import Solution, StepLabel

# The modules whose raw INSERTs and COPYs name columns: each builds its lists with
# ``Columns.insert`` when it is imported, which refuses a list that does not fit.
RAW_WRITERS = (
    "labeling.queue.claim",
    "labeling.queue.submit",
    "bench.queue_load",
    "bench.queue_sql",
    "bench.dashboard",
)


def _model_of(table: str):
    for model in apps.get_models():
        if model._meta.db_table == table:
            return model
    raise AssertionError(f"no model has the table {table} that common.columns declares")


def _split(model) -> tuple[set[str], set[str]]:
    """(columns a raw INSERT must name, columns the database fills) as the model has them."""
    required, filled = set(), set()
    for f in model._meta.concrete_fields:
        fills = f.primary_key or f.null or f.db_default is not NOT_PROVIDED
        (filled if fills else required).add(f.column)
    return required, filled


def test_every_table_is_declared_once():
    assert {labeling.columns.ASSIGNMENT, annotators.columns.API_TOKEN, USER} <= set(DECLARED)
    tables = [c.table for c in DECLARED]
    assert len(tables) == len(set(tables)), tables


@pytest.mark.parametrize("columns", DECLARED, ids=lambda c: c.table)
def test_a_declaration_has_its_models_columns(columns: Columns):
    model = _model_of(columns.table)
    required, filled = _split(model)
    where = f"{columns.table} ({model.__name__}) in common.columns' declarations"
    added = (required | filled) - columns.names
    assert not added, (
        f"{where} lacks {sorted(added)}: declare each in `required` if the database cannot fill "
        "it (then every raw INSERT must name it: they fail at import until they do), else in "
        "`filled`; or give the field a db_default"
    )
    gone = columns.names - (required | filled)
    assert not gone, f"{where} declares {sorted(gone)}, which the model no longer has"
    assert set(columns.required) == required, (
        f"{where}: `required` must be exactly the columns with no database default "
        f"(NOT NULL, no db_default): {sorted(required)}"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("columns", DECLARED, ids=lambda c: c.table)
def test_the_database_has_the_declared_columns(columns: Columns):
    with connection.cursor() as cursor:
        found = {
            c.name for c in connection.introspection.get_table_description(cursor, columns.table)
        }
    assert columns.names <= found


@pytest.mark.parametrize("module", RAW_WRITERS)
def test_every_raw_writer_names_the_columns_its_tables_need(module):
    importlib.import_module(module)  # raises ColumnsError if a list does not fit


def test_a_list_that_leaves_out_a_required_column_is_refused():
    with pytest.raises(ColumnsError, match=r"labeling_assignment leaves out source"):
        labeling.columns.ASSIGNMENT.insert(
            "campaign_id", "solution_id", "annotator_id", "status", "leased_at", "finish_reason"
        )
    with pytest.raises(ColumnsError, match=r"names archivd, which it does not have"):
        labeling.columns.STEP.insert("solution_id", "index", "text", "archivd")
    assert labeling.columns.STEP.sql("solution_id", "index", "text") == "solution_id, index, text"


def test_the_export_reader_reads_a_model_field_for_each_field_of_its_rows():
    """The reader's rows are its dataclasses, filled positionally from ``values_list``: each
    field's path must name a field of the model it reads."""

    def resolve(model, path: str) -> None:
        *hops, last = path.split("__")
        for hop in hops:
            model = model._meta.get_field(hop).related_model
        model._meta.get_field(last)

    for path in reader._SOLUTION_FIELDS:
        resolve(Solution, path)
    for path in reader._LABEL_FIELDS:
        resolve(StepLabel, path)
    names = [f.name for f in fields(reader.SolutionData)]
    assert len(reader._SOLUTION_FIELDS) == names.index("split")

"""Table rows as portable JSON, written and read through the models of a migration state, never today's models.

A fixture made by one schema must load into that schema however the models change later, so both directions
go through the historical models that the migration graph gives at the fixture's leaf migrations: they know
each column's field, hence how to read it and how each database wants it written (a UUID is ``uuid`` on
PostgreSQL and 32 hex characters on SQLite, which is why the fixture is not SQL text). Values are stored as JSON:
datetimes, dates and UUIDs as ISO strings, JSON columns as their JSON value.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Iterable
from typing import Any

from django.apps.registry import Apps
from django.core.management.color import no_style
from django.db import connection, transaction
from django.db.migrations.loader import MigrationLoader
from django.db.models import JSONField, Model

Leaves = tuple[tuple[str, str], ...]


def state_apps(leaves: Leaves) -> Apps:
    """The historical model registry at ``leaves`` (the schema a fixture was made with)."""
    return MigrationLoader(None, ignore_no_migrations=True).project_state(list(leaves)).apps


def models_by_table(apps: Apps, app_labels: Iterable[str]) -> dict[str, type[Model]]:
    """Concrete models of ``app_labels`` (with auto-created many-to-many tables) keyed by their table."""
    labels = set(app_labels)
    return {
        model._meta.db_table: model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.app_label in labels and model._meta.managed and not model._meta.proxy
    }


def _columns(model: type[Model]) -> dict[str, Any]:
    return {field.column: field for field in model._meta.local_concrete_fields}


def _to_json(value: Any, field: Any) -> Any:
    if isinstance(field, JSONField) or value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    raise TypeError(f"{field.model.__name__}.{field.name}: no JSON form for {type(value).__name__}")


def dump_rows(models: dict[str, type[Model]]) -> list[dict[str, Any]]:
    """Every row of every table, ordered by primary key: ``[{"table", "columns", "rows"}, ...]``, by table name."""
    tables = []
    for table, model in sorted(models.items()):
        fields = _columns(model)
        attnames = [field.attname for field in fields.values()]
        rows = model._base_manager.order_by("pk").values_list(*attnames)
        tables.append(
            {
                "table": table,
                "columns": list(fields),
                "rows": [[_to_json(v, f) for v, f in zip(row, fields.values(), strict=True)] for row in rows],
            }
        )
    return tables


def python_value(field: Any, value: Any) -> Any:
    """The Python value of a fixture cell, as ``field`` holds it (JSON columns keep their JSON value)."""
    if value is None or isinstance(field, JSONField):
        return value
    return field.to_python(value)


def load_rows(tables: list[dict[str, Any]], models: dict[str, type[Model]]) -> None:
    """Insert the rows with plain INSERTs, in one transaction, then move the id sequences past them.

    Django creates foreign keys deferrable on PostgreSQL and SQLite, so inside one transaction the order of the
    tables does not matter.
    """
    quote = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        for table in tables:
            fields = _columns(models[table["table"]])
            chosen = [fields[column] for column in table["columns"]]
            sql = (
                f"INSERT INTO {quote(table['table'])} ({', '.join(quote(c) for c in table['columns'])}) "
                f"VALUES ({', '.join(['%s'] * len(chosen))})"
            )
            params = [
                [f.get_db_prep_save(python_value(f, v), connection) for f, v in zip(chosen, row, strict=True)]
                for row in table["rows"]
            ]
            if params:
                cursor.executemany(sql, params)
        loaded = [models[table["table"]] for table in tables]
        for statement in connection.ops.sequence_reset_sql(no_style(), loaded):
            cursor.execute(statement)

"""PostgreSQL bulk statements of the outcome ingest: a cursor that binds apart, and array literals built fast.

Ingest (events) and the episode store (episodes) both write whole batches as one statement over column arrays
(``unnest``); this is what they share. Runs on Django's connection, so inside its transaction. Imports Django's
connection and psycopg only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import psycopg
from django.db import connection


@contextlib.contextmanager
def server_side_cursor() -> Iterator[psycopg.Cursor]:
    """A psycopg cursor that sends parameters apart from the statement (PostgreSQL only), for a ``with`` block.

    Django's default client-side binding quotes every parameter into the SQL text; for array literals of a
    whole batch that quoting costs as much as the insert. The driver's errors come out as Django's (a lost
    connection is an ``OperationalError`` that the tasks retry, and Django knows to drop the connection), as
    they do from Django's own cursors.
    """
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor


def text_array(values: list[str]) -> str:
    """A PostgreSQL array literal of strings, every element quoted (so "" and "NULL" stay strings).

    Written here because psycopg's generic list adapter costs more per element than the whole insert. Names
    checked by ``events.from_wire`` never hold a quote or a backslash: one join does; anything else is escaped.
    """
    if not values:
        return "{}"
    joined = "\x00".join(values)  # PostgreSQL text cannot hold NUL, so it cannot occur inside a value
    if '"' in joined or "\\" in joined:
        joined = joined.replace("\\", "\\\\").replace('"', '\\"')
    return '{"' + joined.replace("\x00", '","') + '"}'


def number_array(values: Iterable[float]) -> str:
    """A PostgreSQL array literal of floats."""
    return "{" + ",".join(repr(float(value)) for value in values) + "}"

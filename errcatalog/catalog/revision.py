"""The catalog's revision: a number in the database that every committed change to a catalog table raises.

Triggers raise it, so no writer can forget to: the admin, the REST API, an import, a shell's ``QuerySet.update()``
and SQL typed into ``psql`` all count. Serving processes poll it (one indexed single-row read) and rebuild their
snapshot when it moves (``errcatalog.catalog.snapshot``). A revision is the pair (number, changed_at): a database
whose revision row was emptied (a test database flushed between tests) counts from 0 again, at another time.

- PostgreSQL: a deferred constraint trigger per row, so the revision row is written at commit, after the
  transaction's other rows; writers take the revision row's lock last and cannot deadlock on it. A transaction
  raises the number once, however many rows it writes (a transaction-local setting remembers it did).
  ``TRUNCATE`` raises it too.
- SQLite: a trigger per row and statement kind; SQLite's writers take turns, so there is nothing to order.

The SQL here is what the migrations install; change it only together with a migration that reinstalls it.
"""

from __future__ import annotations

from django.db import connections

from errcatalog.catalog.models import CatalogRevision

# The tables a snapshot is built from. A table added to the snapshot needs its triggers (a migration calling
# ``install_sql`` for it).
CATALOG_TABLES = (
    "errcatalog_errorcode",
    "errcatalog_templatevariant",
    "errcatalog_parameterhint",
    "errcatalog_classificationrule",
)

Revision = tuple[int, str]
# The revision of a database whose catalog has never been written (or whose revision row was emptied).
NO_REVISION: Revision = (0, "")

_TABLE = CatalogRevision._meta.db_table
_POSTGRESQL_FUNCTION = "errcatalog_catalog_revision_raise"
_SQLITE_OPERATIONS = ("INSERT", "UPDATE", "DELETE")


def catalog_revision(using: str = "default") -> Revision:
    """The database's current catalog revision: one indexed read of one row.

    Plain SQL, not the ORM: every serving process runs this twice a second, and building the query cost 280 us of
    Python against 15 us for the read. ``changed_at`` is compared, never parsed, so its driver's form will do.
    """
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT number, changed_at FROM {connection.ops.quote_name(_TABLE)} WHERE id = 1")  # noqa: S608
        row = cursor.fetchone()
    if row is None:
        return NO_REVISION
    number, changed_at = row
    return number, str(changed_at or "")


def install_sql(vendor: str, table: str) -> list[str]:
    """The statements that make every change to ``table`` raise the catalog revision."""
    if vendor == "postgresql":
        return [
            _POSTGRESQL_FUNCTION_SQL,
            f"CREATE CONSTRAINT TRIGGER {table}_revision AFTER INSERT OR UPDATE OR DELETE ON {table} "
            f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {_POSTGRESQL_FUNCTION}()",
            f"CREATE TRIGGER {table}_revision_truncate AFTER TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {_POSTGRESQL_FUNCTION}()",
        ]
    if vendor == "sqlite":
        return [
            # Table names are this module's constants (CATALOG_TABLES), never input.
            f"CREATE TRIGGER {table}_revision_{operation.lower()} AFTER {operation} ON {table} BEGIN "  # noqa: S608
            f"INSERT INTO {_TABLE} (id, number, changed_at) VALUES (1, 1, strftime('%Y-%m-%d %H:%M:%f', 'now')) "
            "ON CONFLICT (id) DO UPDATE SET number = number + 1, changed_at = excluded.changed_at; END"
            for operation in _SQLITE_OPERATIONS
        ]
    raise NotImplementedError(f"errcatalog supports PostgreSQL and SQLite, not {vendor}")


def remove_sql(vendor: str, table: str) -> list[str]:
    """The statements that undo ``install_sql`` for ``table`` (the function stays until the last table goes)."""
    if vendor == "postgresql":
        return [
            f"DROP TRIGGER IF EXISTS {table}_revision ON {table}",
            f"DROP TRIGGER IF EXISTS {table}_revision_truncate ON {table}",
        ]
    if vendor == "sqlite":
        return [f"DROP TRIGGER IF EXISTS {table}_revision_{operation.lower()}" for operation in _SQLITE_OPERATIONS]
    raise NotImplementedError(f"errcatalog supports PostgreSQL and SQLite, not {vendor}")


def reinstall_sql(vendor: str, table: str) -> list[str]:
    """``table``'s triggers removed and installed again: for a migration whose schema change SQLite makes by
    rebuilding the table (an added column), which drops the table's triggers with it."""
    return [*remove_sql(vendor, table), *install_sql(vendor, table)]


def remove_function_sql(vendor: str) -> list[str]:
    return [f"DROP FUNCTION IF EXISTS {_POSTGRESQL_FUNCTION}()"] if vendor == "postgresql" else []


# One write per transaction: the transaction-local setting is set by the first trigger that runs at commit, and
# every later one (one per row the transaction wrote) returns at once. clock_timestamp(), not now(): two
# transactions that started in the same microsecond still get different times.
_POSTGRESQL_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {_POSTGRESQL_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('errcatalog.catalog_revision_raised', true) = 'yes' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('errcatalog.catalog_revision_raised', 'yes', true);
    INSERT INTO {_TABLE} AS revision (id, number, changed_at) VALUES (1, 1, clock_timestamp())
    ON CONFLICT (id) DO UPDATE SET number = revision.number + 1, changed_at = excluded.changed_at;
    RETURN NULL;
END
$$
"""  # noqa: S608 (constants only)

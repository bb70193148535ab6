"""The catalog revision: every committed change to a catalog table raises it, whoever writes it and how."""

from __future__ import annotations

import contextlib

import pytest
from django.db import connection, transaction

from errcatalog.catalog.defaults import catalog_load_defaults
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.revision import CATALOG_TABLES, NO_REVISION, catalog_revision
from errcatalog.catalog.services import error_code_update
from errcatalog.gateway.models import NamedServer, NamedServerUpstream, Upstream
from errcatalog.gateway.services import upstream_create, upstream_tools_record

# Committed transactions: PostgreSQL raises the revision at commit (deferred triggers).
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def loaded():
    catalog_load_defaults(reset=False)


def _moves(change) -> bool:
    before = catalog_revision()
    change()
    return catalog_revision() != before


def test_a_database_whose_catalog_was_never_written_has_no_revision():
    with connection.cursor() as cursor:
        # A transactional test's flush leaves the revision row its truncations raised; this is a new database's.
        cursor.execute("DELETE FROM errcatalog_catalogrevision")
    assert catalog_revision() == NO_REVISION


def test_emptying_a_catalog_table_at_once_raises_it(loaded):
    def empty_hints():
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("TRUNCATE errcatalog_parameterhint")
            else:  # SQLite has no TRUNCATE; its whole-table DELETE runs the row triggers
                cursor.execute("DELETE FROM errcatalog_parameterhint")

    assert _moves(empty_hints)


def test_every_kind_of_write_raises_it(loaded):
    network = ErrorCode.objects.get(code="NETWORK_ERROR")
    variant = network.variants.get(name="default", locale="")
    assert _moves(lambda: error_code_update(error_code=network, explanation="Through the write path."))
    # Writers that send no signals: the triggers count them all the same.
    assert _moves(lambda: ErrorCode.objects.filter(code="NETWORK_ERROR").update(doc_url="https://docs.example/"))
    assert _moves(lambda: TemplateVariant.objects.filter(pk=variant.pk).update(message="Bulk-updated."))
    assert _moves(lambda: ParameterHint.objects.create(tool="send_email", parameter="cc", description="Copy to"))
    assert _moves(lambda: ParameterHint.objects.filter(parameter="cc").delete())
    assert _moves(
        lambda: ClassificationRule.objects.filter(position=ClassificationRule.objects.last().position).delete()
    )

    def raw_sql():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE errcatalog_errorcode SET explanation = 'Typed into psql.' WHERE code = 'TIMEOUT'")

    assert _moves(raw_sql)


GATEWAY_TABLES = ("errcatalog_upstream", "errcatalog_upstreamtool", "errcatalog_namedserver",
                  "errcatalog_namedserverupstream")  # fmt: skip


@pytest.mark.parametrize("table", [*CATALOG_TABLES, *GATEWAY_TABLES])
def test_a_write_to_each_table_after_every_migration_raises_it(loaded, table):
    # SQLite rebuilds a table for many schema changes and drops its triggers with it: a migration that does so must
    # install them again (0011 does, for the rules' tool column).
    upstream_create(actor=None, name="web", prefix="web", transport="http", url="https://mcp.example.com/mcp")
    upstream_tools_record(upstream="web", listing=[{"name": "echo", "inputSchema": {"type": "object"}}])
    server = NamedServer.objects.create(name="support")
    NamedServerUpstream.objects.create(server=server, upstream=Upstream.objects.get(name="web"))

    def touch():
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET id = id WHERE id = (SELECT MIN(id) FROM {table})")  # noqa: S608

    assert _moves(touch)


def test_the_embedded_sqlite_database_has_every_tables_triggers_after_all_migrations(tmp_path):
    # The check above runs on the suite's database; PostgreSQL alters a table in place, so on it a migration that
    # rebuilds a table on SQLite without installing its triggers again passes. The embedded default is SQLite.
    import sqlite3

    from tests.support.served_app import EMBEDDED_DATABASE, embedded_environment

    embedded_environment(tmp_path)  # migrated by manage.py migrate, as ./dev up does
    with contextlib.closing(sqlite3.connect(tmp_path / EMBEDDED_DATABASE)) as database:
        triggers = {
            (table, name)
            for table, name in database.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
        }
    for table in (*CATALOG_TABLES, *GATEWAY_TABLES):
        names = {name for owner, name in triggers if owner == table}
        assert names == {f"{table}_revision_{operation}" for operation in ("insert", "update", "delete")}, table


def test_a_rolled_back_change_leaves_it(loaded):
    def rolled_back():
        with transaction.atomic():
            ErrorCode.objects.filter(code="NETWORK_ERROR").update(explanation="Never committed.")
            transaction.set_rollback(True)

    assert not _moves(rolled_back)


def test_reading_and_history_leave_it(loaded):
    def read_and_prune_history():
        list(ErrorCode.objects.all())
        ErrorCode.history.filter(code="NETWORK_ERROR").delete()

    assert not _moves(read_and_prune_history)


def test_a_transaction_of_many_rows_raises_it_once_on_postgresql(loaded):
    before = catalog_revision()
    with transaction.atomic():
        for variant in TemplateVariant.objects.all()[:20]:
            variant.message = f"Edited {variant.pk}."
            variant.save(update_fields=["message"])
    number, _changed_at = catalog_revision()
    if connection.vendor == "postgresql":
        # One write of the revision row per transaction, at commit.
        assert number == before[0] + 1
    else:
        # SQLite raises it per row (its writers take turns, so that costs no waiting).
        assert number == before[0] + 20

"""A database made by main on 2026-11-23 migrates forward to this checkout's migrations without losing data.

The committed fixture (``main_2026_11_23.json``) was made by ``make_fixture.py`` from that day's code: the
default catalog, a code of our own with variants in two locales, hints, rules, tokens, outcome events, episodes,
rollups, demo documents, and the users, groups and permissions the tokens use. The test builds that day's
schema from an empty database, loads the fixture, migrates to the latest migrations and reads every row back
through today's models and services. It never regenerates the fixture: the fixture is what old code wrote.

The test drops and recreates every table of the test database, so it is a ``transaction=True`` test (Django
flushes the tables after it, as after every such test) and it leaves the database migrated to the latest
migrations, as it found it, whether it passes or fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from errcatalog.render import Failure, render, tool_result
from errcatalog.catalog.snapshot import catalog_changed, catalog_snapshot
from errcatalog.access.tokens import client_token_authenticate
from tests.migrations.tables import load_rows, models_by_table, python_value, state_apps

FIXTURE = Path(__file__).with_name("main_2026_11_23.json")

# main on 2026-11-23: the leaf migration of every app that has migrations, which is the schema the fixture was
# made with. (django-simple-history has no migrations of its own: its historical tables are errcatalog's.)
MAIN_2026_11_23 = (
    ("admin", "0003_logentry_add_action_flag_choices"),
    ("auth", "0012_alter_user_first_name_max_length"),
    ("contenttypes", "0002_remove_content_type_name"),
    ("errcatalog", "0007_outcome_locale"),
    ("mcpserver", "0001_initial"),
    ("sessions", "0001_initial"),
)
# The apps whose tables the fixture holds, by their labels on main on 2026-11-23.
FIXTURE_APPS = ("auth", "contenttypes", "errcatalog", "mcpserver")

# The demo documents' model, found by its label wherever it lives today. When the model moves to an app of its
# own, its label changes (e.g. "demo.Document"); its table and rows must not.
DOCUMENT_MODEL = "demo.Document"
DOCUMENT_TABLE = "mcpserver_document"

# Django's bookkeeping: migrate adds content types and permissions for new models, and a model moving to another
# app may have its content type renamed with it. Their rows must stay (the fixture's groups and users hold
# permissions by id), but may change.
BOOKKEEPING_TABLES = {"django_content_type", "auth_permission"}

# Shipped wording a migration rewords on purpose, where no editor changed it: (table, column) -> {old: new}.
# 0019: FUNCTION_NOT_FOUND no longer names the tool the caller asked for (the endpoint never passes that name).
REWORDED = {
    ("errcatalog_templatevariant", "message"): {
        "The tool {tool_name} does not exist.": "No tool of that name exists on this server."
    },
}


# Shipped rules a migration moves or deletes on purpose, by position -> new position (None: deleted). 0029: an
# upstream's text is read before its bare JSON-RPC code, and an upstream's -32603 is its failure, not INTERNAL_ERROR.
# 0033: the fallback for a failed tool moves after the rules on common words; 0034: both fallbacks move after the
# generic rules.
RULES_MOVED = {220: 301, 230: 302, 240: 303, 250: 304, 260: None, 270: 305, 300: 319, 310: 320}
RULE_TABLE = "errcatalog_classificationrule"


@pytest.fixture(scope="module")
def fixture() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def _drop_every_table() -> None:
    quote = connection.ops.quote_name
    cascade = " CASCADE" if connection.vendor == "postgresql" else ""
    with connection.constraint_checks_disabled(), connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"DROP TABLE {quote(table)}{cascade}")


@pytest.fixture
def empty_database(transactional_db):
    """The test database with no table at all; afterwards rebuilt at the latest migrations for the next tests."""
    _drop_every_table()
    yield
    _drop_every_table()
    call_command("migrate", verbosity=0)


def _migrate_main_database_forward(fixture: dict[str, Any]) -> None:
    MigrationExecutor(connection).migrate(list(MAIN_2026_11_23))
    load_rows(fixture["tables"], models_by_table(state_apps(MAIN_2026_11_23), FIXTURE_APPS))
    call_command("migrate", verbosity=0)


def _rows_now(table: dict[str, Any]) -> tuple[dict[Any, tuple], dict[Any, tuple]]:
    """The fixture's rows of ``table`` and the same columns read now through today's model, both by primary key."""
    model = models_by_table(apps, {config.label for config in apps.get_app_configs()}).get(table["table"])
    assert model is not None, f"no model holds {table['table']} any more"
    fields = {field.column: field for field in model._meta.local_concrete_fields}
    missing = [column for column in table["columns"] if column not in fields]
    assert not missing, f"{table['table']} lost columns {missing}"
    chosen = [fields[column] for column in table["columns"]]
    pk_index = table["columns"].index(model._meta.pk.column)
    expected = {}
    for row in table["rows"]:
        values = tuple(
            _reworded(table["table"], field, python_value(field, value))
            for field, value in zip(chosen, row, strict=True)
        )
        if table["table"] == RULE_TABLE:
            values = _moved_rule(table["columns"], values)
            if values is None:
                continue
        expected[values[pk_index]] = values
    rows = model._base_manager.values_list(*(field.attname for field in chosen))
    return expected, {row[pk_index]: row for row in rows}


def _moved_rule(columns: list[str], values: tuple) -> tuple | None:
    position = columns.index("position")
    if values[position] not in RULES_MOVED:
        return values
    moved = RULES_MOVED[values[position]]
    return None if moved is None else (*values[:position], moved, *values[position + 1 :])


def _reworded(table: str, field, value):
    changes = REWORDED.get((table, field.column), {})
    return changes.get(value, value) if isinstance(value, str) else value


@pytest.mark.django_db(transaction=True)
def test_database_made_by_main_on_2026_11_23_keeps_every_row_when_migrated_forward(empty_database, fixture):
    _migrate_main_database_forward(fixture)

    for table in fixture["tables"]:
        expected, now = _rows_now(table)
        if table["table"] in BOOKKEEPING_TABLES:
            assert set(expected) <= set(now), f"{table['table']} lost rows"
        else:
            assert now == expected, f"{table['table']} changed"

    # The code of our own renders exactly as main rendered it, in both of its locales.
    catalog_changed()
    failure = Failure(fixture["custom_code"], **fixture["custom_failure"])
    for locale, rendered in fixture["renders"].items():
        assert tool_result(render(catalog_snapshot(), failure, locale=locale), "both") == rendered

    # The tokens' plain keys still authenticate, with their flags and scope; the revoked one still does not.
    keys = fixture["plain_keys"]
    writer = client_token_authenticate(keys["admin-writer"])
    assert (writer.user.username, writer.can_write_catalog, writer.can_read_metrics) == ("fixture-admin", True, True)
    scoped = client_token_authenticate(keys["editor-scoped"])
    assert scoped.allows_tool("lookup_error")
    assert not scoped.allows_tool("delete_document")
    assert scoped.user.has_perm("errcatalog.change_errorcode")
    assert client_token_authenticate(keys["reader-revoked"]) is None

    # The demo documents are readable through whichever model holds them now.
    documents = apps.get_model(DOCUMENT_MODEL)
    (document_rows,) = (table for table in fixture["tables"] if table["table"] == DOCUMENT_TABLE)
    title, content = document_rows["columns"].index("title"), document_rows["columns"].index("content")
    assert sorted(documents.objects.values_list("title", "content")) == sorted(
        (row[title], row[content]) for row in document_rows["rows"]
    )

    # The history of the code of our own: created, then changed by the admin.
    history = apps.get_model("errcatalog", "ErrorCode").history.filter(code=fixture["custom_code"])
    assert [(row.history_type, row.history_user and row.history_user.username) for row in history] == [
        ("~", "fixture-admin"),
        ("+", None),
    ]


def test_fixture_was_made_at_the_pinned_leaves(fixture):
    assert [tuple(leaf) for leaf in fixture["leaves"]] == list(MAIN_2026_11_23)


def test_fixture_has_rows_in_every_table_of_our_apps(fixture):
    tables = models_by_table(state_apps(MAIN_2026_11_23), ("errcatalog", "mcpserver"))
    filled = {table["table"] for table in fixture["tables"] if table["rows"]}
    assert set(tables) <= filled

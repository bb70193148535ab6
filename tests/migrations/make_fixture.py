"""Make the migration fixture: a database built by this checkout's migrations and services, dumped as JSON.

    .venv/bin/python -m tests.migrations.make_fixture [OUTPUT]

builds a throwaway SQLite database (or the empty database DATABASE_URL names), migrates it to this checkout's
latest migrations, fills every table our apps own through the public services (the default catalog, a code of
our own with variants in two locales, hints, rules, tokens, outcome events with their episodes and rollups, demo
documents, and the users and groups the tokens belong to), and writes every row to OUTPUT (by default the
fixture of ``tests.migrations.test_migrate_forward``). Also written: the plain keys of the tokens and the
renders of the code of our own, which the test compares after migrating.

The test loads the committed file and never runs this script: the point of the fixture is that an older
checkout made it. Run it again only to make a fixture of a newer schema, and then pin the new leaves in the test.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).with_name("main_2026_11_23.json")
# The tables the fixture holds: our apps', and Django's rows that the tokens' users, groups and permissions use.
APP_LABELS = ("auth", "contenttypes", "errcatalog", "mcpserver")
# Our own code: every catalog column set to something other than its default, so a lost value shows.
CUSTOM_CODE = "FIXTURE_QUOTA_EXCEEDED"
CUSTOM_FAILURE = {"tool_name": "fixture_export", "status_code": 429, "retry_after": 90, "service": "fixture_api"}
# A fixed day in the past for the outcome events, so the fixture's times do not depend on when it was made.
EVENTS_START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def _setup_django() -> None:
    if not os.environ.get("DATABASE_URL"):
        # A throwaway SQLite database: the fixture must come from migrations and services alone.
        os.environ["ERRCATALOG_DATA_DIR"] = tempfile.mkdtemp(prefix="errcatalog-fixture-")
    for name in ("REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _fill_catalog(users: dict[str, Any]) -> None:
    from django.core.management import call_command

    from errcatalog.catalog import services
    from errcatalog.catalog.models import ErrorCode

    call_command("catalog_load_defaults", verbosity=0)
    code = services.error_code_create(
        code=CUSTOM_CODE,
        category="rate_limit",
        kind="error",
        retryable=True,
        retry_after_seconds=60,
        http_statuses=[429, 503],
        jsonrpc_code=-31042,
        system=False,
        doc_url="https://errors.example.com/fixture-quota",
        explanation="Made by tests/migrations/make_fixture.py: a quota of the fixture's own service ran out.",
        setup_url="/integrations/{service}",
        action_required="wait_for_quota",
        variants=[
            {
                "name": "plain",
                "locale": "en",
                "weight": 70,
                "header": "Error",
                "message": "{service} refused {tool_name} with {status_code} {status_text}.",
                "cause": "The daily quota of {service} is used up.",
                "instruction": "Wait {retry_after} seconds, then call {tool_name} again with the same arguments.",
            },
            {
                "name": "polite",
                "locale": "fr",
                "weight": 30,
                "header": "AI Provider Error",
                "message": "{service} a refusé {tool_name} ({status_code}).",
                "cause": "Le quota du jour est épuisé.",
                "instruction": "Attendez {retry_after} secondes, puis rappelez {tool_name}.",
                "question": "Voulez-vous réessayer {tool_name} plus tard ?",
            },
        ],
    )
    # A change after creation gives the code a second history row, of type "~", by a user.
    code._history_user = users["admin"]
    services.error_code_update(error_code=code, explanation=code.explanation + " Changed once.")
    services.parameter_hint_create(
        tool="fixture_export",
        parameter="quota_name",
        description="the name of the quota to check",
        parameter_type="identifier",
        example="daily_exports",
        question="Which quota should {tool_name} check?",
    )
    services.parameter_hint_create(tool="fixture_export", parameter="limit", description="how many rows", example="50")
    fixture_code = ErrorCode.objects.get(code=CUSTOM_CODE)
    services.classification_rule_create(
        position=9000, error_code=fixture_code, status_min=429, status_max=429, upstream="fixture", note="fixture"
    )
    services.classification_rule_create(
        position=9010, error_code=fixture_code, exception="TimeoutError", transport="timeout", active=False
    )


def _make_users() -> dict[str, Any]:
    from django.contrib.auth.models import Group, Permission, User

    editors = Group.objects.create(name="fixture-editors")
    editors.permissions.set(
        Permission.objects.filter(content_type__app_label="errcatalog", codename__in=["view_errorcode", "change_errorcode"])
    )
    admin = User.objects.create_superuser(username="fixture-admin", email="admin@example.com", password="pw-admin")
    editor = User.objects.create_user(username="fixture-editor", email="editor@example.com", password="pw-editor")
    editor.groups.add(editors)
    editor.user_permissions.add(Permission.objects.get(codename="view_clienttoken"))
    reader = User.objects.create_user(username="fixture-reader", password="pw-reader", first_name="Rea", is_active=True)
    return {"admin": admin, "editor": editor, "reader": reader}


def _make_tokens(users: dict[str, Any]) -> dict[str, str]:
    from errcatalog.access.tokens import client_token_create, client_token_revoke

    keys = {}
    _, keys["admin-writer"] = client_token_create(
        user=users["admin"], name="admin-writer", can_write_catalog=True, can_read_metrics=True
    )
    _, keys["editor-scoped"] = client_token_create(
        user=users["editor"], name="editor-scoped", tool_scope=["lookup_error", "create_document"]
    )
    revoked, keys["reader-revoked"] = client_token_create(user=users["reader"], name="reader-revoked")
    client_token_revoke(token=revoked)
    return keys


def _record_outcomes() -> None:
    from errcatalog.outcomes import episode_store, rollups
    from errcatalog.outcomes.events import OutcomeEvent
    from errcatalog.outcomes.ingest import ingest_events

    start = EVENTS_START.timestamp()

    def call(minutes: float, outcome: str, **fields: Any) -> OutcomeEvent:
        fields.setdefault("client", "token:1")
        fields.setdefault("latency_ms", 12.5 + minutes)
        return OutcomeEvent(tool="fixture_export", outcome=outcome, ts=start + minutes * 60, **fields)

    error = {"code": CUSTOM_CODE, "variant": "plain", "locale": "en"}
    batch = [
        call(0, "ok", session="s-ok"),
        call(1, "ok", session="s-ok", source="api", client="reporter-one"),
        # Recovered at the first retry.
        call(2, "error", session="s-recover", sentry_event_id="a" * 32, **error),
        call(3, "ok", session="s-recover"),
        # Exhausted: the error and three failed retries.
        *[call(10 + i, "error", session="s-exhaust", **error) for i in range(4)],
        # Interactive, in French, answered through an elicitation, then abandoned (no call within the window).
        call(
            70,
            "error",
            session="s-abandon",
            code=CUSTOM_CODE,
            variant="polite",
            locale="fr",
            interactive=True,
            elicitation="decline",
        ),
        call(71, "input_required", session="s-abandon", elicitation="requested"),
        # Still open when the fixture was made.
        call(24 * 60 + 5, "error", session="s-open", client="ip:192.0.2.7", **error),
    ]
    ingest_events(batch)
    episode_store.episode_close_abandoned(now=EVENTS_START + timedelta(hours=3))
    rollups.compute_due(now=EVENTS_START + timedelta(days=1, hours=1))


def _make_documents() -> None:
    from demo.documents import document_create

    document_create(content="Quarterly report\n\nRevenue rose.", title="Q3 report")
    document_create(content="Meeting notes: ship the fixture.")
    document_create(content="Unicode survives: é, ß, 日本語, emoji 🚀.", title="Unicode")


def _renders() -> dict[str, Any]:
    from errcatalog.render import Failure, render, tool_result
    from errcatalog.catalog.snapshot import catalog_changed, catalog_snapshot

    catalog_changed()
    snapshot = catalog_snapshot()
    failure = Failure(CUSTOM_CODE, **CUSTOM_FAILURE)
    return {locale: tool_result(render(snapshot, failure, locale=locale), "both") for locale in ("en", "fr")}


def _fixture_text(fixture: dict[str, Any]) -> str:
    """The fixture as JSON with one table row per line: small, and a diff shows which rows changed."""

    def compact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    tables = ",\n".join(
        f' {{"table": {compact(t["table"])}, "columns": {compact(t["columns"])}, "rows": ['
        + ",".join(f"\n  {compact(row)}" for row in t["rows"])
        + "]}"
        for t in fixture["tables"]
    )
    head = json.dumps({k: v for k, v in fixture.items() if k != "tables"}, indent=1, ensure_ascii=False)
    return head[:-2] + ',\n "tables": [\n' + tables + "\n ]\n}\n"


def make(output: Path) -> None:
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    from tests.migrations.tables import dump_rows, models_by_table, state_apps

    if connection.introspection.table_names():
        sys.exit(f"{connection.settings_dict['NAME']} is not empty: give an empty database.")
    call_command("migrate", verbosity=0)
    leaves = tuple(sorted(MigrationLoader(connection).graph.leaf_nodes()))
    users = _make_users()
    _fill_catalog(users)
    keys = _make_tokens(users)
    _record_outcomes()
    _make_documents()
    fixture = {
        "made_by": "tests/migrations/make_fixture.py",
        "leaves": [list(leaf) for leaf in leaves],
        "plain_keys": keys,
        "custom_code": CUSTOM_CODE,
        "custom_failure": CUSTOM_FAILURE,
        "renders": _renders(),
        "tables": dump_rows(models_by_table(state_apps(leaves), APP_LABELS)),
    }
    output.write_text(_fixture_text(fixture))
    counts = ", ".join(f"{table['table']} {len(table['rows'])}" for table in fixture["tables"])
    print(f"wrote {output} ({output.stat().st_size} bytes): {counts}")


if __name__ == "__main__":
    _setup_django()
    make(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE)

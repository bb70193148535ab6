"""The data migration that reads an upstream's failure text before its bare JSON-RPC code, and no longer answers an
upstream's -32603 with INTERNAL_ERROR."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from errcatalog.catalog.models import ClassificationRule, ErrorCode
from errcatalog.catalog.snapshot import catalog_changed, catalog_snapshot
from errcatalog.render.classify import FailureFacts, classify
from tests.errcatalog.catalog import rule_layouts

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("errcatalog.migrations.0029_upstream_text_rules_before_jsonrpc_codes")
OLD_POSITIONS = {301: 220, 302: 230, 303: 240, 304: 250, 305: 270, 104: 320}


def _as_installed_before() -> None:
    """The default rules as an installation had them before the migration."""
    # The layout of later migrations and defaults undone first: the fallback for a failed tool back at 300, the
    # default rules shipped after this migration (the position 270 is one of them) gone.
    rule_layouts.before_common_words()
    for new, old in OLD_POSITIONS.items():
        ClassificationRule.objects.filter(position=new).update(position=old)
    ClassificationRule.objects.filter(position__in=range(291, 298)).update(kind="tool_error")
    ClassificationRule.objects.create(
        position=260, error_code=ErrorCode.objects.get(code="INTERNAL_ERROR"), jsonrpc_code=-32603
    )


def _code(jsonrpc: int, text: str) -> str:
    catalog_changed()
    return classify(
        catalog_snapshot(), FailureFacts(jsonrpc_code=jsonrpc, kind="jsonrpc_error", upstream="db", text=text)
    )


def test_an_upstreams_internal_error_is_read_by_its_text_after_it_and_never_called_ours():
    _as_installed_before()
    assert _code(-32603, "no such table: users") == "INTERNAL_ERROR"  # the behaviour being migrated away

    MIGRATION.forward(apps, None)

    rules = dict(ClassificationRule.objects.values_list("position", "error_code__code"))
    assert 260 not in rules and "INTERNAL_ERROR" not in rules.values()
    moved = [rules[p] for p in (301, 302, 303, 304, 305, 104)]
    assert moved == ["PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "RESOURCE_NOT_FOUND",
                     "EXECUTION_FAILURE"]  # fmt: skip
    assert not ClassificationRule.objects.filter(position__in=range(291, 298)).exclude(kind="").exists()
    assert _code(-32603, "no such table: users") == "NOT_FOUND"
    assert _code(-32603, "Widget exploded") == "UPSTREAM_TOOL_FAILED"  # claims no cause: the inbox
    assert _code(-32602, "Invalid timezone: 'Mars'") == "INVALID_PARAMETER"
    assert _code(-32601, "Method not found") == "METHOD_NOT_FOUND"


def test_rules_an_operator_changed_or_positions_an_operator_holds_are_left_alone():
    _as_installed_before()
    ClassificationRule.objects.filter(position=260).update(note="ours: we want this")
    ClassificationRule.objects.filter(position=220).update(upstream="legacy")
    ClassificationRule.objects.create(position=302, error_code=ErrorCode.objects.get(code="NOT_FOUND"), upstream="x")
    ClassificationRule.objects.filter(position=297).update(tool="db__query")

    MIGRATION.forward(apps, None)

    rules = dict(ClassificationRule.objects.values_list("position", "error_code__code"))
    assert rules[260] == "INTERNAL_ERROR"  # a note of the operator's makes the rule theirs
    assert rules[220] == "PARSE_ERROR" and 301 not in rules  # an operator's condition: not moved
    assert rules[230] == "INVALID_REQUEST" and rules[302] == "NOT_FOUND"  # the target held by an operator's rule
    assert ClassificationRule.objects.get(position=297).kind == "tool_error"  # narrowed to a tool by the operator


def test_going_back_restores_the_layout_it_found():
    _as_installed_before()
    before = set(ClassificationRule.objects.values_list("position", "error_code__code", "kind", "jsonrpc_code"))

    MIGRATION.forward(apps, None)
    MIGRATION.backward(apps, None)

    assert set(ClassificationRule.objects.values_list("position", "error_code__code", "kind", "jsonrpc_code")) == before

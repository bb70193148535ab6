"""The migration that makes room for generic rules before the upstream fallbacks, and what an installation upgraded to
it answers."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.core.management import call_command

from errcatalog.catalog.inbox_rules import suggested_position
from errcatalog.catalog.models import ClassificationRule
from errcatalog.catalog.snapshot import catalog_changed, catalog_snapshot
from errcatalog.render.classify import FailureFacts, classification, known
from tests.errcatalog.catalog import rule_layouts

pytestmark = pytest.mark.django_db

MIGRATION = rule_layouts.GENERIC
GUESSED = "Lookup stage 3 reported: widget zq-7 not found in registry"


def _answer(text: str, kind: str = "tool_error") -> tuple[str, bool]:
    """The code for an upstream's failure and whether it counts as classified."""
    catalog_changed()
    found = classification(catalog_snapshot(), FailureFacts(kind=kind, upstream="xl", tool="xl__read", text=text))
    return found.code, known(found.code, found.rule)


def _fallbacks() -> dict[str, int]:
    rows = ClassificationRule.objects.filter(
        error_code__code="UPSTREAM_TOOL_FAILED", pattern="", kind__in=("tool_error", "jsonrpc_error")
    )
    return dict(rows.values_list("kind", "position"))


def test_the_fallbacks_move_after_the_generic_rules_which_the_next_start_creates():
    rule_layouts.before_generic_rules()
    assert _fallbacks() == {"tool_error": 309, "jsonrpc_error": 310}
    assert _answer(GUESSED) == ("UPSTREAM_TOOL_FAILED", False)

    MIGRATION.forward(apps, None)
    call_command("catalog_load_defaults", verbosity=0)  # what every start does

    assert _fallbacks() == {"tool_error": 319, "jsonrpc_error": 320}
    generic = ClassificationRule.objects.filter(generic=True)
    assert sorted(generic.values_list("position", flat=True)) == list(rule_layouts.GENERIC_RULES)
    # A guess answers the model with a fitting code, and still counts as unclassified (the inbox keeps it).
    assert _answer(GUESSED) == ("NOT_FOUND", False)
    assert _answer(GUESSED, kind="jsonrpc_error") == ("NOT_FOUND", False)
    assert _answer('relation "customers" does not exist') == ("NOT_FOUND", True)  # the specific rule, still first
    assert _answer("Widget exploded") == ("UPSTREAM_TOOL_FAILED", False)
    # A rule made from the inbox goes before the generic rules, so that it is tried before they guess.
    assert suggested_position(catalog_snapshot(), "tool_error") == 309
    assert suggested_position(catalog_snapshot(), "jsonrpc_error") == 309


def test_a_fallback_an_operator_changed_or_a_position_an_operator_holds_is_left_alone():
    rule_layouts.before_generic_rules()
    ClassificationRule.objects.filter(position=309).update(note="ours: every failed tool")
    fallback = ClassificationRule.objects.get(position=309)
    ClassificationRule.objects.create(position=320, error_code_id=fallback.error_code_id, upstream="mine")

    MIGRATION.forward(apps, None)

    assert _fallbacks() == {"tool_error": 309, "jsonrpc_error": 310}
    assert ClassificationRule.objects.get(position=320).upstream == "mine"


def test_going_back_restores_the_layout_it_found():
    rule_layouts.before_generic_rules()
    before = set(ClassificationRule.objects.values_list("position", "error_code__code", "kind", "pattern"))

    MIGRATION.forward(apps, None)
    assert _fallbacks() == {"tool_error": 319, "jsonrpc_error": 320}
    MIGRATION.backward(apps, None)

    assert set(ClassificationRule.objects.values_list("position", "error_code__code", "kind", "pattern")) == before

"""The data migration that moves the fallback for a failed upstream tool after the rules on common words, and what an
installation upgraded to it answers."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.core.management import call_command

from errcatalog.catalog.inbox_rules import suggested_position
from errcatalog.catalog.models import ClassificationRule
from errcatalog.catalog.snapshot import catalog_changed, catalog_snapshot
from errcatalog.render.classify import FailureFacts, classify
from tests.errcatalog.catalog import rule_layouts

pytestmark = pytest.mark.django_db

MIGRATION = rule_layouts.COMMON_WORDS
NEW_RULES = rule_layouts.COMMON_WORDS_RULES
_as_installed_before = rule_layouts.before_common_words


def _code(text: str) -> str:
    catalog_changed()
    return classify(catalog_snapshot(), FailureFacts(kind="tool_error", upstream="xl", tool="xl__read", text=text))


def _fallback_positions() -> list[int]:
    return sorted(
        ClassificationRule.objects.filter(error_code__code="UPSTREAM_TOOL_FAILED", kind="tool_error", pattern="")
        .values_list("position", flat=True)
    )  # fmt: skip


def test_the_fallback_moves_after_the_rules_on_common_words_which_the_next_start_creates():
    _as_installed_before()
    assert _fallback_positions() == [300]
    assert _code("Workbook missing.xlsx does not exist.") == "UPSTREAM_TOOL_FAILED"

    MIGRATION.forward(apps, None)
    call_command("catalog_load_defaults", verbosity=0)  # what every start does (the generic rules came later)
    rule_layouts.forget_generic_rules()

    assert _fallback_positions() == [309]
    assert set(NEW_RULES) <= set(ClassificationRule.objects.values_list("position", flat=True))
    assert _code("Workbook missing.xlsx does not exist.") == "NOT_FOUND"
    assert _code("Invalid operation 'explode'. Must be one of: append, prepend") == "INVALID_PARAMETER"
    assert _code('relation "customers" does not exist') == "NOT_FOUND"  # the specific rule, still first
    assert _code("Widget exploded") == "UPSTREAM_TOOL_FAILED"  # claims no cause: the inbox
    # A rule made from the inbox goes just before the fallback the group fell to: after every shipped rule.
    assert suggested_position(catalog_snapshot(), "tool_error") == 308


def test_a_fallback_an_operator_changed_or_a_position_an_operator_holds_is_left_alone():
    _as_installed_before()
    ClassificationRule.objects.filter(position=300).update(note="ours: every failed tool")
    MIGRATION.forward(apps, None)
    assert _fallback_positions() == [300]

    MIGRATION.backward(apps, None)
    ClassificationRule.objects.filter(position=300).update(note="")
    fallback = ClassificationRule.objects.get(position=300)
    ClassificationRule.objects.create(position=309, error_code_id=fallback.error_code_id, upstream="mine")
    MIGRATION.forward(apps, None)
    assert ClassificationRule.objects.get(position=300).kind == "tool_error"
    assert ClassificationRule.objects.get(position=309).upstream == "mine"


def test_going_back_restores_the_layout_it_found():
    _as_installed_before()
    before = set(ClassificationRule.objects.values_list("position", "error_code__code", "kind", "pattern"))

    MIGRATION.forward(apps, None)
    assert _fallback_positions() == [309]
    MIGRATION.backward(apps, None)

    assert set(ClassificationRule.objects.values_list("position", "error_code__code", "kind", "pattern")) == before

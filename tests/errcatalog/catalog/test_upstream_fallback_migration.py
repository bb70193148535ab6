"""The data migration that points the shipped upstream fallbacks at UPSTREAM_TOOL_FAILED, which claims no cause."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.core.management import call_command

from errcatalog.catalog.models import ClassificationRule, ErrorCode
from errcatalog.catalog.snapshot import catalog_snapshot
from errcatalog.render.classify import classify, facts_from_exception
from mcpserver.gateway.failures import UpstreamToolError
from tests.errcatalog.catalog import rule_layouts

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("errcatalog.migrations.0021_upstream_fallback_claims_no_cause")


def _as_installed_before() -> None:
    """A catalog as an installation had it: the shipped fallbacks on EXECUTION_FAILURE, no UPSTREAM_TOOL_FAILED."""
    rule_layouts.before_common_words()  # the fallback for a failed tool at 300, where it was then
    old = ErrorCode.objects.get(code="EXECUTION_FAILURE")
    ClassificationRule.objects.filter(position__in=(300, 310)).update(error_code=old)
    ClassificationRule.objects.filter(error_code__code="UPSTREAM_TOOL_FAILED").delete()
    ErrorCode.objects.filter(code="UPSTREAM_TOOL_FAILED").delete()


def test_the_shipped_fallbacks_claim_no_cause_after_it_and_an_operators_rule_is_kept():
    _as_installed_before()
    # An operator's own rule on the malformed kind, and the shipped malformed rule (at 104 since 0029): both stay.
    ClassificationRule.objects.create(
        position=252, error_code=ErrorCode.objects.get(code="EXECUTION_FAILURE"), kind="tool_error", upstream="mine"
    )

    MIGRATION.forward(apps, None)

    codes = dict(ClassificationRule.objects.values_list("position", "error_code__code"))
    assert codes[300] == codes[310] == "UPSTREAM_TOOL_FAILED"
    assert codes[252] == codes[104] == "EXECUTION_FAILURE"
    new = ErrorCode.objects.get(code="UPSTREAM_TOOL_FAILED")
    assert new.system and not new.retryable
    variant = new.variants.get()
    assert "not in the arguments" not in variant.cause and "Do not repeat the identical call" in variant.instruction
    # Served: an unrecognised upstream failure is answered with it.
    failure = UpstreamToolError("up", "Widget exploded", tool="t")
    assert classify(catalog_snapshot(), facts_from_exception(failure, upstream="up", tool="up__t")) == (
        "UPSTREAM_TOOL_FAILED"
    )
    # catalog_load_defaults afterwards finds nothing of it missing.
    call_command("catalog_load_defaults", verbosity=0)
    assert new.variants.count() == 1

    MIGRATION.backward(apps, None)
    codes = dict(ClassificationRule.objects.values_list("position", "error_code__code"))
    assert codes[300] == codes[310] == "EXECUTION_FAILURE"


def test_a_fallback_an_operator_changed_is_left_alone():
    _as_installed_before()
    ClassificationRule.objects.filter(position=300).update(upstream="time")
    MIGRATION.forward(apps, None)
    codes = dict(ClassificationRule.objects.values_list("position", "error_code__code"))
    assert (codes[300], codes[310]) == ("EXECUTION_FAILURE", "UPSTREAM_TOOL_FAILED")

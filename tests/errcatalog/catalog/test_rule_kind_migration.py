"""The data migration that says by kind what rules said by the gateway's exception class names."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.core.management import call_command

from errcatalog.catalog.models import ClassificationRule, ErrorCode

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("errcatalog.migrations.0020_rule_kind_and_pattern")


def test_rules_naming_the_gateways_classes_say_the_same_by_kind_and_others_are_kept():
    call_command("catalog_load_defaults", verbosity=0)
    ClassificationRule.objects.all().delete()
    code = ErrorCode.objects.get(code="INVALID_ARGUMENTS")
    named = {
        1: "UpstreamToolError",
        2: "UpstreamJsonRpcError",
        3: "UpstreamHttpError",
        4: "UpstreamTimeout",
        5: "UpstreamConnectionError",
        6: "UpstreamProtocolError",
        7: "UpstreamUnavailable",
        8: "UpstreamError",  # any upstream failure: no one kind says that
        9: "UserInputError",  # our own tools' class: stays
    }
    for position, exception in named.items():
        ClassificationRule.objects.create(
            position=position, error_code=code, exception=exception, upstream="time", tool="time__get_current_time"
        )

    MIGRATION._by_kind(apps, None)

    rules = {r.position: (r.exception, r.kind, r.upstream, r.tool) for r in ClassificationRule.objects.all()}
    tool = ("time", "time__get_current_time")
    assert rules == {
        1: ("", "tool_error", *tool),
        2: ("", "jsonrpc_error", *tool),
        3: ("", "http_status", *tool),
        4: ("", "timeout", *tool),
        5: ("", "connection", *tool),
        6: ("", "malformed", *tool),
        7: ("", "circuit_open", *tool),
        8: ("UpstreamError", "", *tool),
        9: ("UserInputError", "", *tool),
    }

    MIGRATION._by_class(apps, None)  # back: the class names again
    assert {r.position: r.exception for r in ClassificationRule.objects.all()} == named

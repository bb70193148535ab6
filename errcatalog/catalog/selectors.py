"""Reads of catalog rows, shaped for listing and editing (rendering reads the snapshot instead)."""

from __future__ import annotations

from django.db.models import QuerySet

from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint


def error_code_list(*, category: str = "", kind: str = "", active: bool | None = None) -> QuerySet[ErrorCode]:
    """Codes with their variants, by code; the filters apply when given."""
    codes = ErrorCode.objects.prefetch_related("variants")
    if category:
        codes = codes.filter(category=category)
    if kind:
        codes = codes.filter(kind=kind)
    if active is not None:
        codes = codes.filter(active=active)
    return codes.order_by("code")


def parameter_hint_list(*, tool: str = "") -> QuerySet[ParameterHint]:
    hints = ParameterHint.objects.all()
    if tool:
        hints = hints.filter(tool=tool)
    return hints.order_by("tool", "parameter")


def classification_rule_list() -> QuerySet[ClassificationRule]:
    """Rules in the order classification tries them."""
    return ClassificationRule.objects.select_related("error_code").order_by("position")

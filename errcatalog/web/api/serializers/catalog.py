"""The catalog's rows in the REST API: codes with their variants, parameter hints and classification rules.

The catalog serializers check the shape of a request (types, lengths, choices, the nesting of variants); the
catalog's own rules are checked once, by ``errcatalog.catalog.services`` (through the models' ``clean()``), for
the REST API as for the admin and import, and a row that breaks one is answered as a 400 in the same shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.settings import api_settings

from errcatalog.catalog.models import (
    RULE_CONDITIONS,
    ClassificationRule,
    ErrorCode,
    ParameterHint,
    Problems,
    TemplateVariant,
    classification_rule_problems,
    error_code_problems,
    parameter_hint_problems,
)
from errcatalog.render.patterns import PATTERN_MAX_CHARS
from errcatalog.vocabulary import CODE_PATTERN, TOOL_NAME_PATTERN
from errcatalog.web.api.serializers.request_fields import MAX_LIST_ITEMS, KnownFieldsOnly, value_range


class CatalogRowSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    """A catalog row's serializer that also reports the catalog's rules (``errcatalog.catalog.models``).

    The rules are checked once, by the service every writer calls; they are also run here, beside the request's
    shape, so that one answer lists every problem of a request, as the admin's forms and a catalog file do. A
    field that already failed its own check is not judged again.
    """

    @staticmethod
    def row_problems(values: Mapping[str, Any]) -> Problems:
        return {}

    def to_internal_value(self, data: Any) -> Any:
        errors: dict[str, Any] = {}
        try:
            values = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, Mapping):
                raise
            errors = dict(exc.detail)
            values = {k: v for k, v in data.items() if k not in errors} if isinstance(data, Mapping) else {}
        # A PATCH is judged as the row it would make: the saved values with the request's over them.
        row = self.instance
        saved = {f.name: getattr(row, f.name) for f in row._meta.concrete_fields} if row is not None else {}
        for name, texts in self.row_problems({**saved, **values}).items():
            key = name or api_settings.NON_FIELD_ERRORS_KEY
            if key not in errors:
                errors[key] = texts
        if errors:
            raise serializers.ValidationError(errors)
        return values


class TemplateVariantSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    class Meta:
        model = TemplateVariant
        fields = [
            "name",
            "locale",
            "weight",
            "header",
            "message",
            "cause",
            "instruction",
            "question",
            "active",
            "updated_at",
        ]
        read_only_fields = ["updated_at"]
        # The key is required, as in catalog files; it may be empty only to reproduce a one-line toolError:v1 message.
        extra_kwargs = {"weight": value_range("weight"), "instruction": {"required": True, "allow_blank": True}}


class ErrorCodeSerializer(CatalogRowSerializer):
    """A code with its variants.

    Writing ``variants`` matches them by (locale, name): PUT makes the list the complete set (variants left out
    are deleted), PATCH updates and adds the listed ones and keeps the others. Without ``variants`` they are
    left alone.
    """

    http_statuses = serializers.ListField(
        child=serializers.IntegerField(**value_range("http_status")), required=False, max_length=MAX_LIST_ITEMS
    )
    optional_parameters = serializers.ListField(
        child=serializers.RegexField(f"^{TOOL_NAME_PATTERN}$", max_length=128),
        required=False,
        max_length=MAX_LIST_ITEMS,
        help_text="The question protocol's data.optional_parameters for missing input.",
    )
    variants = TemplateVariantSerializer(many=True, required=False, allow_empty=False)
    row_problems = staticmethod(error_code_problems)

    class Meta:
        model = ErrorCode
        fields = [
            "code",
            "category",
            "kind",
            "retryable",
            "retry_after_seconds",
            "http_statuses",
            "jsonrpc_code",
            "system",
            "doc_url",
            "explanation",
            "setup_url",
            "action_required",
            "optional_parameters",
            "guidance",
            "active",
            "allocation",
            "allocation_frozen",
            "updated_at",
            "variants",
        ]
        read_only_fields = ["updated_at"]
        extra_kwargs = {
            "retry_after_seconds": value_range("retry_after_seconds"),
            "jsonrpc_code": value_range("jsonrpc_code"),
        }

    def validate_variants(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: set[tuple[str, str]] = set()
        errors: list[dict[str, list[str]]] = []
        for variant in value:
            key = (variant.get("locale", ""), variant.get("name", "default"))
            errors.append({"name": ["Another variant has this name and locale."]} if key in seen else {})
            seen.add(key)
        if any(errors):
            raise serializers.ValidationError(errors)
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        variants = attrs.get("variants")
        if self.instance is None and not variants:
            raise serializers.ValidationError({"variants": ["A code needs at least one variant."]})
        if self.instance is not None and variants and self.partial:
            # PATCH merges into existing variants; one that does not exist yet needs its required texts.
            existing = {(v.locale, v.name) for v in self.instance.variants.all()}
            errors = []
            for variant in variants:
                missing = {}
                if (variant.get("locale", ""), variant.get("name", "default")) not in existing:
                    missing = {f: ["This field is required."] for f in ("message", "instruction") if f not in variant}
                errors.append(missing)
            if any(errors):
                raise serializers.ValidationError({"variants": errors})
        return attrs


class ParameterHintSerializer(CatalogRowSerializer):
    tool = serializers.CharField(max_length=128)
    parameter = serializers.CharField(max_length=128)
    row_problems = staticmethod(parameter_hint_problems)

    class Meta:
        model = ParameterHint
        fields = ["id", "tool", "parameter", "description", "parameter_type", "example", "question", "updated_at"]
        read_only_fields = ["id", "updated_at"]


class CodeByNameField(serializers.SlugRelatedField):
    """A catalog code by its name. A name no code can have is refused before the database is asked: PostgreSQL
    refuses text with a NUL character in a query (a 500), and no other such name can match."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and not re.fullmatch(CODE_PATTERN, data):
            self.fail("does_not_exist", slug_name=self.slug_field, value=data.replace("\x00", "\\x00")[:64])
        return super().to_internal_value(data)


class ClassificationRuleSerializer(CatalogRowSerializer):
    code = CodeByNameField(
        source="error_code", slug_field="code", queryset=ErrorCode.objects.all(), help_text="The code to assign."
    )
    upstream = serializers.CharField(max_length=64, required=False, allow_blank=True)
    tool = serializers.CharField(max_length=128, required=False, allow_blank=True)
    # A pattern's spaces are part of it ("^ENOENT: ").
    pattern = serializers.CharField(
        max_length=PATTERN_MAX_CHARS, required=False, allow_blank=True, trim_whitespace=False
    )
    row_problems = staticmethod(classification_rule_problems)

    class Meta:
        model = ClassificationRule
        fields = ["id", "position", "code", *RULE_CONDITIONS, "says", "generic", "active", "note"]
        read_only_fields = ["id"]
        extra_kwargs = {name: value_range(name) for name in ("position", "status_min", "status_max", "jsonrpc_code")}

"""The catalog's rows in the REST API: viewsets of codes with their variants, parameter hints and classification
rules, each write through one service of ``errcatalog.catalog.services``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import exceptions, viewsets
from rest_framework.request import Request

from errcatalog.catalog import selectors, services
from errcatalog.catalog.models import Category, ClassificationRule, ErrorCode, Kind, ParameterHint, TemplateVariant
from errcatalog.web.api import examples
from errcatalog.web.api.permissions import CatalogModelPermissions, catalog_write_denial, permission_name
from errcatalog.web.api.serializers.catalog import (
    ClassificationRuleSerializer,
    ErrorCodeSerializer,
    ParameterHintSerializer,
)
from errcatalog.web.api.serializers.errors import ApiErrorSerializer
from errcatalog.web.api.views.errors import READ_ERRORS, WRITE_ERRORS, BodyRequired

_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def _bool_param(request: Request, name: str) -> bool | None:
    """A boolean filter: None when absent; anything but true/false/1/0 (a blank value too) is a 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw.lower() not in _BOOLEANS:
        raise exceptions.ValidationError({name: ["Use true or false."]})
    return _BOOLEANS[raw.lower()]


# What a text filter may hold, as the schema says it: anything but NUL, which no stored value holds.
NO_NUL_PATTERN = r"^[^\x00]*$"


def _text_param(request: Request, name: str) -> str:
    """A text filter: "" when absent; one holding a NUL character is a 400 (PostgreSQL cannot compare such text, and
    no stored value holds one)."""
    raw = request.query_params.get(name, "")
    if "\x00" in raw:
        raise exceptions.ValidationError({name: ["Null characters are not allowed."]})
    return raw


def _choice_param(request: Request, name: str, choices: list[str]) -> str:
    """A filter by one of ``choices``: "" when absent; any other value (a blank one too) is a 400 naming them."""
    raw = request.query_params.get(name)
    if raw is None:
        return ""
    if raw not in choices:
        raise exceptions.ValidationError({name: [f"Use one of {', '.join(choices)}."]})
    return raw


def _needs(model, action: str, extra: str = "") -> str:
    return (
        f"Needs the `{permission_name(model, action)}` model permission{extra}; with a client token, also a token "
        "created with catalog write rights (403 otherwise)."
    )


def _crud_schema(
    serializer,
    model,
    *,
    list_parameters: tuple[OpenApiParameter, ...] = (),
    variants: bool = False,
    create_examples: list[OpenApiExample],
    update_examples: list[OpenApiExample],
    partial_update_examples: list[OpenApiExample],
):
    """Documents a catalog viewset with the permission each write needs, the error answers it can give and an
    example of each write (``examples``)."""
    error = ApiErrorSerializer
    nested = {
        "add": " (and `errcatalog.add_templatevariant` for its variants)",
        "change": " (and `errcatalog.add_/change_/delete_templatevariant` for the variants it adds, changes or, "
        "with PUT, removes)",
        "delete": " (and `errcatalog.delete_templatevariant` when it has variants)",
    }
    extra = nested if variants else {}
    return extend_schema_view(
        list=extend_schema(
            tags=["catalog"],
            parameters=list(list_parameters),
            responses={200: serializer(many=True), 400: error, **READ_ERRORS},
        ),
        retrieve=extend_schema(tags=["catalog"], responses={200: serializer, 404: error, **READ_ERRORS}),
        create=extend_schema(
            tags=["catalog"],
            description=_needs(model, "add", extra.get("add", "")),
            responses={201: serializer, **WRITE_ERRORS},
            examples=create_examples,
        ),
        update=extend_schema(
            tags=["catalog"],
            description=_needs(model, "change", extra.get("change", "")),
            responses={200: serializer, 404: error, **WRITE_ERRORS},
            examples=update_examples,
        ),
        partial_update=extend_schema(
            tags=["catalog"],
            description=_needs(model, "change", extra.get("change", "")),
            responses={200: serializer, 404: error, **WRITE_ERRORS},
            examples=partial_update_examples,
        ),
        destroy=extend_schema(
            tags=["catalog"],
            description=_needs(model, "delete", extra.get("delete", "")),
            responses={204: None, 404: error, 409: error, **READ_ERRORS},
        ),
    )


def _require_variant_permissions(request: Request, actions: set[str]) -> None:
    """Nested variants are rows of their own in the admin, with their own permissions: the API asks the same."""
    denial = catalog_write_denial(request.user, TemplateVariant, actions) if actions else None
    if denial is not None:
        raise exceptions.PermissionDenied(denial)


def _variant_actions(error_code: ErrorCode | None, variants: list[dict[str, Any]] | None, *, replace: bool) -> set[str]:
    """What writing ``variants`` to ``error_code`` does to its variant rows: add, change and/or delete."""
    if variants is None:
        return set()
    if error_code is None:
        return {"add"} if variants else set()
    existing = {(v.locale, v.name): v for v in error_code.variants.all()}
    actions: set[str] = set()
    given = set()
    for fields in variants:
        key = (fields.get("locale", ""), fields.get("name", "default"))
        given.add(key)
        current = existing.get(key)
        if current is None:
            actions.add("add")
        elif any(getattr(current, name) != value for name, value in fields.items()):
            actions.add("change")
    if replace and set(existing) - given:
        actions.add("delete")
    return actions


@_crud_schema(
    ErrorCodeSerializer,
    ErrorCode,
    variants=True,
    list_parameters=(
        OpenApiParameter("category", enum=Category.values, description="Only codes of this category."),
        OpenApiParameter("kind", enum=Kind.values, description="Only codes of this kind."),
        OpenApiParameter("active", OpenApiTypes.BOOL, description="Only active (true) or inactive (false) codes."),
    ),
    create_examples=examples.CODE_CREATE,
    update_examples=examples.CODE_UPDATE,
    partial_update_examples=examples.CODE_PARTIAL_UPDATE,
)
class ErrorCodeViewSet(BodyRequired, viewsets.ModelViewSet):
    """Error codes with their template variants, addressed by code (`/api/v1/codes/NOT_FOUND/`)."""

    serializer_class = ErrorCodeSerializer
    permission_classes = [CatalogModelPermissions]
    lookup_field = "code"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.error_code_list(
            category=_choice_param(self.request, "category", Category.values),
            kind=_choice_param(self.request, "kind", Kind.values),
            active=_bool_param(self.request, "active"),
        )

    def perform_create(self, serializer: ErrorCodeSerializer) -> None:
        data = serializer.validated_data
        _require_variant_permissions(self.request, _variant_actions(None, data.get("variants"), replace=True))
        serializer.instance = services.error_code_create(**data)

    def perform_update(self, serializer: ErrorCodeSerializer) -> None:
        replace = not serializer.partial
        data = serializer.validated_data
        _require_variant_permissions(
            self.request, _variant_actions(serializer.instance, data.get("variants"), replace=replace)
        )
        serializer.instance = services.error_code_update(
            error_code=serializer.instance, replace_variants=replace, **data
        )

    def perform_destroy(self, instance: ErrorCode) -> None:
        # Deleting a code deletes its variants with it; the admin asks for their delete permission too.
        if instance.variants.exists():
            _require_variant_permissions(self.request, {"delete"})
        services.error_code_delete(error_code=instance)


@_crud_schema(
    ParameterHintSerializer,
    ParameterHint,
    list_parameters=(OpenApiParameter("tool", description="Only hints for this tool.", pattern=NO_NUL_PATTERN),),
    create_examples=examples.HINT_CREATE,
    update_examples=examples.HINT_UPDATE,
    partial_update_examples=examples.HINT_PARTIAL_UPDATE,
)
class ParameterHintViewSet(BodyRequired, viewsets.ModelViewSet):
    """How to ask for a tool's parameters."""

    serializer_class = ParameterHintSerializer
    permission_classes = [CatalogModelPermissions]
    # Ids are ASCII digits, as the schema says: int() would also read " 5" or "\t5" as 5.
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        return selectors.parameter_hint_list(tool=_text_param(self.request, "tool"))

    def perform_create(self, serializer: ParameterHintSerializer) -> None:
        serializer.instance = services.parameter_hint_create(**serializer.validated_data)

    def perform_update(self, serializer: ParameterHintSerializer) -> None:
        serializer.instance = services.parameter_hint_update(hint=serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance: ParameterHint) -> None:
        services.parameter_hint_delete(hint=instance)


@_crud_schema(
    ClassificationRuleSerializer,
    ClassificationRule,
    create_examples=examples.RULE_CREATE,
    update_examples=examples.RULE_UPDATE,
    partial_update_examples=examples.RULE_PARTIAL_UPDATE,
)
class ClassificationRuleViewSet(BodyRequired, viewsets.ModelViewSet):
    """Classification rules, in the order they are tried."""

    serializer_class = ClassificationRuleSerializer
    permission_classes = [CatalogModelPermissions]
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        return selectors.classification_rule_list()

    def perform_create(self, serializer: ClassificationRuleSerializer) -> None:
        serializer.instance = services.classification_rule_create(**serializer.validated_data)

    def perform_update(self, serializer: ClassificationRuleSerializer) -> None:
        serializer.instance = services.classification_rule_update(rule=serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance: ClassificationRule) -> None:
        services.classification_rule_delete(rule=instance)

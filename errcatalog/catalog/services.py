"""Writes to the catalog: error codes with their variants, parameter hints and classification rules.

Callers pass values that have already been validated (by an API serializer or an admin form); the database
constraints are the last line. Every save names its changed fields, so history rows and ``updated_at`` move
only when something changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import models, transaction

from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant


def _save_changes(instance: models.Model, fields: Mapping[str, Any]) -> None:
    changed = [name for name, value in fields.items() if getattr(instance, name) != value]
    if not changed:
        return
    for name in changed:
        setattr(instance, name, fields[name])
    # auto_now fields are only refreshed when they are among update_fields.
    stamps = [f.name for f in instance._meta.concrete_fields if getattr(f, "auto_now", False)]
    instance.save(update_fields=[*changed, *stamps])


def _variant_key(fields: Mapping[str, Any]) -> tuple[str, str]:
    return fields.get("locale", ""), fields.get("name", "default")


@transaction.atomic
def error_code_create(*, variants: Iterable[Mapping[str, Any]], **fields: Any) -> ErrorCode:
    """Create a code with its variants."""
    error_code = ErrorCode.objects.create(**fields)
    for variant in variants:
        TemplateVariant.objects.create(error_code=error_code, **variant)
    return error_code


@transaction.atomic
def error_code_update(
    *,
    error_code: ErrorCode,
    variants: Iterable[Mapping[str, Any]] | None = None,
    replace_variants: bool = False,
    **fields: Any,
) -> ErrorCode:
    """Change a code's fields and, when ``variants`` is given, its variants, matched by (locale, name).

    Matched variants are updated in place (keeping their history), unmatched ones are created. With
    ``replace_variants`` the given list is the complete set and variants not in it are deleted; otherwise they
    are kept.
    """
    _save_changes(error_code, fields)
    if variants is None:
        return error_code
    existing = {(v.locale, v.name): v for v in error_code.variants.all()}
    given = {_variant_key(v): v for v in variants}
    if replace_variants:
        for key, stale in existing.items():
            if key not in given:
                stale.delete()
    for key, variant_fields in given.items():
        current = existing.get(key)
        if current is None:
            TemplateVariant.objects.create(error_code=error_code, **variant_fields)
        else:
            _save_changes(current, variant_fields)
    return error_code


@transaction.atomic
def error_code_delete(*, error_code: ErrorCode) -> None:
    """Delete a code and its variants. Raises ``ProtectedError`` while classification rules point to it."""
    error_code.delete()


def parameter_hint_create(**fields: Any) -> ParameterHint:
    return ParameterHint.objects.create(**fields)


def parameter_hint_update(*, hint: ParameterHint, **fields: Any) -> ParameterHint:
    _save_changes(hint, fields)
    return hint


def classification_rule_create(**fields: Any) -> ClassificationRule:
    return ClassificationRule.objects.create(**fields)


def classification_rule_update(*, rule: ClassificationRule, **fields: Any) -> ClassificationRule:
    _save_changes(rule, fields)
    return rule

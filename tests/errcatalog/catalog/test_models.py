"""The database refuses catalog rows that would break rendering, whatever writes them."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from errcatalog.catalog.models import ClassificationRule, ErrorCode, TemplateVariant


def _code(**fields) -> ErrorCode:
    return ErrorCode(**{"code": "SOME_CODE", "category": "unknown", **fields})


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fields",
    [
        {"code": "lower_case"},
        {"code": "TRAILING_"},
        {"jsonrpc_code": -32050},  # inside JSON-RPC's reserved range and defined by nobody
        {"retry_after_seconds": 90_000},
    ],
)
def test_invalid_error_codes_are_refused_by_the_database(fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        _code(**fields).save()


@pytest.mark.django_db
@pytest.mark.parametrize("jsonrpc_code", [None, -32602, -32002, -32001, -31404, 1001])
def test_defined_and_product_jsonrpc_codes_are_accepted(jsonrpc_code):
    _code(jsonrpc_code=jsonrpc_code).save()


@pytest.mark.django_db
def test_variant_names_are_unique_per_code_and_locale_and_weights_bounded():
    code = _code()
    code.save()
    TemplateVariant.objects.create(error_code=code, name="a", message="m", instruction="i")
    TemplateVariant.objects.create(error_code=code, name="a", locale="de", message="m", instruction="i")
    with pytest.raises(IntegrityError), transaction.atomic():
        TemplateVariant.objects.create(error_code=code, name="a", message="m", instruction="i")
    with pytest.raises(IntegrityError), transaction.atomic():
        TemplateVariant.objects.create(error_code=code, name="b", weight=5000, message="m", instruction="i")


@pytest.mark.django_db
@pytest.mark.parametrize("bounds", [{"status_min": 99}, {"status_max": 600}, {"status_min": 500, "status_max": 400}])
def test_rule_status_ranges_are_checked(bounds):
    code = _code()
    code.save()
    with pytest.raises(IntegrityError), transaction.atomic():
        ClassificationRule.objects.create(position=1, error_code=code, **bounds)


@pytest.mark.django_db
def test_template_validators_refuse_bad_placeholders():
    from django.core.exceptions import ValidationError

    code = _code()
    code.save()
    variant = TemplateVariant(error_code=code, name="x", message="{x.__class__}", instruction="ok")
    with pytest.raises(ValidationError) as caught:
        variant.full_clean()
    assert "attribute access and indexing are not allowed" in str(caught.value.message_dict["message"])

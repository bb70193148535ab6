"""Admin with a large catalog: every list page and a code with many variants cost the same queries at any size."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from errcatalog.access.models import ClientToken
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.services import catalog_import
from tests.errcatalog.catalog.admin_pages import admin_url
from tests.errcatalog.catalog.synthetic import synthetic_document

pytestmark = pytest.mark.django_db

LIST_PAGES = [
    (ErrorCode, ""),
    (ErrorCode, "?q=SYNTH_0001"),
    (ErrorCode, "?q=wording+3"),  # variant text: a search across the codes' variants
    (ErrorCode, "?category__exact=network&o=-7"),  # a filter, sorted by the variant count
    (TemplateVariant, ""),
    (TemplateVariant, "?q=Synthetic+failure+12"),
    (TemplateVariant, "?locale=&active__exact=1"),
    (ParameterHint, ""),
    (ClassificationRule, ""),
    (ClientToken, ""),
]


@pytest.fixture
def writer(client, staff_user):
    client.force_login(staff_user)
    return client


def _queries(writer, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = writer.get(url)
    assert response.status_code == 200, url
    return len(captured)


@pytest.mark.parametrize(("model", "query"), LIST_PAGES, ids=lambda v: getattr(v, "__name__", v) or "all")
def test_a_list_page_costs_the_same_queries_for_ten_codes_and_a_thousand(writer, model, query):
    catalog_import(synthetic_document(10, variants=2))
    small = _queries(writer, admin_url(model, "changelist") + query)
    catalog_import(synthetic_document(1000, variants=2))
    assert ErrorCode.objects.count() > 1000
    large = _queries(writer, admin_url(model, "changelist") + query)
    assert large == small


def test_every_list_is_paginated_and_searchable():
    from django.contrib import admin

    for model in (ErrorCode, TemplateVariant, ParameterHint, ClassificationRule, ClientToken):
        page = admin.site._registry[model]
        assert page.list_per_page <= 100, model
        assert page.search_fields, model
        assert page.list_filter, model


def test_a_large_list_shows_one_page_with_a_count(writer):
    catalog_import(synthetic_document(1000, variants=2))
    response = writer.get(admin_url(TemplateVariant, "changelist"))
    assert len(response.context["cl"].result_list) == 100
    assert response.context["cl"].result_count == TemplateVariant.objects.count()


def test_the_page_of_a_code_with_many_variants_costs_the_same_queries_as_one_with_two(writer):
    catalog_import(synthetic_document(20, variants=2))
    few = ErrorCode.objects.get(code="SYNTH_00001_ERROR")
    many = ErrorCode.objects.get(code="SYNTH_00002_ERROR")
    catalog_import({"format": "errcatalog/v1", "codes": [_with_variants(many.code, 150)]})
    assert many.variants.count() == 150
    writer.get(admin_url(ErrorCode, "change", few.pk))  # the first page a process serves fills its caches
    small = _queries(writer, admin_url(ErrorCode, "change", few.pk))
    large = _queries(writer, admin_url(ErrorCode, "change", many.pk))
    assert large == small
    # Every variant is on the page, with its preview.
    response = writer.get(admin_url(ErrorCode, "change", many.pk))
    assert len(response.context["variant_previews"]) == 150


def _with_variants(code: str, count: int) -> dict:
    document = synthetic_document(3, variants=count)
    entry = document["codes"][-1]
    entry["code"] = code
    return entry

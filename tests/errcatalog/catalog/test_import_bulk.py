"""``catalog_import`` writes in bulk: a few statements for thousands of rows, and history for every row as a save."""

from __future__ import annotations

import copy

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.services import catalog_import
from tests.errcatalog.catalog.synthetic import synthetic_document

pytestmark = pytest.mark.django_db


def _queries(work) -> int:
    with CaptureQueriesContext(connection) as captured:
        work()
    return len(captured)


def test_the_statements_of_an_import_do_not_grow_with_its_rows():
    small = _queries(lambda: catalog_import(synthetic_document(5, variants=2), reason="small"))
    for model in (ClassificationRule, ParameterHint, TemplateVariant, ErrorCode):
        model.objects.all().delete()
    large = _queries(lambda: catalog_import(synthetic_document(300, variants=4), reason="large"))
    assert TemplateVariant.objects.count() > 1200
    # A few more batches of 500 rows (and of their history), never a statement per row.
    assert large <= small + 12


def test_history_records_each_created_and_changed_row_with_the_reason():
    catalog_import(synthetic_document(3, variants=2), reason="first import")
    created = TemplateVariant.history.filter(error_code__code="SYNTH_00001_ERROR")
    assert sorted(created.values_list("name", "history_type", "history_change_reason")) == [
        ("v0", "+", "first import"),
        ("v1", "+", "first import"),
    ]
    assert ErrorCode.history.get(code="SYNTH_00001_ERROR").history_type == "+"

    edited = synthetic_document(3, variants=2)
    code = next(c for c in edited["codes"] if c["code"] == "SYNTH_00001_ERROR")
    code["explanation"] = "Edited in git."
    code["variants"][1]["message"] = "A new wording."
    summary = catalog_import(edited, reason="deploy 42")

    assert summary.updated == 2
    assert summary.changes == [
        "update code SYNTH_00001_ERROR: explanation",
        "update variant SYNTH_00001_ERROR/v1: message",
    ]
    latest = TemplateVariant.history.filter(error_code__code="SYNTH_00001_ERROR", name="v1").latest()
    assert (latest.history_type, latest.history_change_reason, latest.message) == ("~", "deploy 42", "A new wording.")
    assert ErrorCode.history.filter(code="SYNTH_00001_ERROR").latest().explanation == "Edited in git."
    # Unchanged rows have no new history.
    assert TemplateVariant.history.filter(error_code__code="SYNTH_00001_ERROR", name="v0").count() == 1
    assert ErrorCode.history.filter(code="SYNTH_00002_ERROR").count() == 1


def test_updated_at_moves_only_for_the_rows_that_changed():
    catalog_import(synthetic_document(3, variants=2))
    stamps = dict(TemplateVariant.objects.values_list("pk", "updated_at"))
    edited = synthetic_document(3, variants=2)
    next(c for c in edited["codes"] if c["code"] == "SYNTH_00002_ERROR")["variants"][0]["weight"] = 50
    catalog_import(edited)
    moved = [pk for pk, stamp in TemplateVariant.objects.values_list("pk", "updated_at") if stamp != stamps[pk]]
    assert moved == [TemplateVariant.objects.get(error_code__code="SYNTH_00002_ERROR", name="v0").pk]


def test_a_row_refused_deep_in_a_large_import_is_named_and_nothing_is_written():
    document = synthetic_document(400, variants=2)
    broken = copy.deepcopy(document)
    index = next(i for i, c in enumerate(broken["codes"]) if c["code"] == "SYNTH_00377_ERROR")
    broken["codes"][index]["doc_url"] = "http://a"  # the schema takes it; the model's URL field does not

    with pytest.raises(Exception, match=r"codes\[\d+\] \(SYNTH_00377_ERROR\) → doc_url: Enter a valid URL\."):
        catalog_import(broken, source="big.yaml")
    assert not ErrorCode.objects.exists()
    assert not TemplateVariant.history.exists()

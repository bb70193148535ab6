"""The one write path: the admin, the REST API and import all write the catalog through ``catalog.services``, and a
rule of the catalog refuses a row the same way, in the same words, whichever writer brings it."""

from __future__ import annotations

import copy

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from rest_framework.test import APIClient

from errcatalog.catalog import services
from errcatalog.catalog.document import CatalogFileError
from errcatalog.catalog.models import (
    ClassificationRule,
    ErrorCode,
    ParameterHint,
    TemplateVariant,
    classification_rule_problems,
    jsonrpc_code_problems,
)
from tests.errcatalog.catalog.admin_pages import admin_url, form_data

pytestmark = pytest.mark.django_db

NO_CONDITION = classification_rule_problems({})[""][0]
RESERVED = jsonrpc_code_problems(-32050)[0]


@pytest.fixture
def catalog() -> None:
    call_command("catalog_load_defaults", verbosity=0)


@pytest.fixture
def admin_client(client, staff_user, catalog):
    client.force_login(staff_user)
    return client


@pytest.fixture
def rest(staff_user, catalog) -> APIClient:
    client = APIClient()
    client.force_login(staff_user)
    return client


@pytest.fixture
def checked(monkeypatch) -> list[str]:
    """The rows the services check before saving them, and the rows they delete, by model name: the gates every
    write passes."""
    seen: list[str] = []
    check, delete = services._prepare, services._delete

    def check_spy(row, change_reason, **options):
        seen.append(type(row).__name__)
        check(row, change_reason, **options)

    def delete_spy(row, change_reason):
        seen.append(f"delete {type(row).__name__}")
        delete(row, change_reason)

    monkeypatch.setattr(services, "_prepare", check_spy)
    monkeypatch.setattr(services, "_delete", delete_spy)
    return seen


def _rule_form(code: ErrorCode, **conditions) -> dict[str, str]:
    return {"position": "9999", "error_code": str(code.pk), "active": "on", "note": "", **conditions}


def _import_document(**rule) -> dict:
    variant = {"message": "It failed.", "instruction": "Try again."}
    return {
        "format": "errcatalog/v1",
        "codes": [{"code": "X_ERROR", "category": "unknown", "variants": [variant]}],
        "rules": [{"position": 9999, "code": "X_ERROR", **rule}],
    }


# --- Every writer goes through the services ---------------------------------------------------------------


def test_admin_saves_edits_and_deletes_through_the_services(admin_client, checked):
    code = ErrorCode.objects.get(code="NETWORK_ERROR")
    page = admin_client.get(admin_url(ErrorCode, "change", code.pk))
    data = form_data(page)
    data["explanation"] = "The network between us and the service failed."
    data["variants-0-instruction"] = "Wait a minute, then try once more."

    assert admin_client.post(admin_url(ErrorCode, "change", code.pk), data).status_code == 302
    response = admin_client.post(admin_url(ClassificationRule, "add"), _rule_form(code, status_min="418"))
    assert response.status_code == 302
    rule = ClassificationRule.objects.get(position=9999)
    response = admin_client.post(admin_url(ClassificationRule, "delete", rule.pk), {"post": "yes"})

    assert response.status_code == 302
    assert checked == ["ErrorCode", "TemplateVariant", "ClassificationRule", "delete ClassificationRule"]
    assert not ClassificationRule.objects.filter(position=9999).exists()
    assert ClassificationRule.history.filter(position=9999, history_type="-").exists()


def test_an_admin_list_edit_goes_through_the_services(admin_client, checked):
    rule = ClassificationRule.objects.order_by("position").first()
    page = admin_client.get(admin_url(ClassificationRule, "changelist"))
    formset = page.context["cl"].formset
    data = _list_form_data(formset)
    data["form-0-active"] = "" if rule.active else "on"
    data["_save"] = "Save"

    assert admin_client.post(admin_url(ClassificationRule, "changelist"), data).status_code == 302

    assert checked == ["ClassificationRule"]
    assert ClassificationRule.objects.get(pk=rule.pk).active is not rule.active


def test_the_admin_delete_action_and_a_new_variant_go_through_the_services(admin_client, checked):
    hints = list(ParameterHint.objects.filter(tool="send_email").values_list("pk", flat=True))
    code = ErrorCode.objects.get(code="NOT_FOUND")
    variant = {"error_code": str(code.pk), "name": "short", "locale": "", "weight": "10", "header": "Error"}
    variant.update(message="Nothing is there.", cause="", instruction="Check the name.", question="", active="on")

    action = {"action": "delete_selected", "_selected_action": hints, "post": "yes"}
    assert admin_client.post(admin_url(ParameterHint, "changelist"), action).status_code == 302
    assert admin_client.post(admin_url(TemplateVariant, "add"), variant).status_code == 302

    assert checked == [*["delete ParameterHint"] * len(hints), "TemplateVariant"]
    assert len(hints) == 3 and not ParameterHint.objects.filter(tool="send_email").exists()
    assert code.variants.filter(name="short").exists()


def _list_form_data(formset) -> dict[str, str]:
    data = {formset.management_form.add_prefix(k): v for k, v in formset.management_form.initial.items()}
    for form in formset.forms:
        for name in form.fields:
            value = form[name].value()
            if isinstance(value, bool):
                if value:
                    data[form.add_prefix(name)] = "on"
            elif value is not None:
                data[form.add_prefix(name)] = value
    return data


def test_rest_writes_go_through_the_services(rest, checked):
    body = {"tool": "book_flight", "parameter": "date", "question": "Which day?"}
    created = rest.post("/api/v1/hints/", body, format="json")
    assert created.status_code == 201, created.content
    changed = rest.patch(f"/api/v1/hints/{created.json()['id']}/", {"example": "2026-12-01"}, format="json")
    assert changed.status_code == 200, changed.content

    assert ParameterHint.objects.get(tool="book_flight").example == "2026-12-01"
    assert rest.delete(f"/api/v1/hints/{created.json()['id']}/").status_code == 204
    rule = rest.post("/api/v1/rules/", {"position": 9999, "code": "NOT_FOUND", "status_min": 418}, format="json")
    assert rest.delete(f"/api/v1/rules/{rule.json()['id']}/").status_code == 204

    assert checked == [
        "ParameterHint",
        "ParameterHint",
        "delete ParameterHint",
        "ClassificationRule",
        "delete ClassificationRule",
    ]


def test_import_goes_through_the_services(catalog, checked):
    summary = services.catalog_import(_import_document(status_min=418))

    assert summary.created == 3
    assert checked == ["ErrorCode", "TemplateVariant", "ClassificationRule"]


# --- One rule, one refusal, whichever writer ----------------------------------------------------------------


def test_a_rule_without_a_condition_is_refused_alike_by_admin_rest_import_and_the_service(admin_client, rest):
    code = ErrorCode.objects.get(code="NOT_FOUND")

    page = admin_client.post(admin_url(ClassificationRule, "add"), _rule_form(code))
    api = rest.post("/api/v1/rules/", {"position": 9999, "code": "NOT_FOUND"}, format="json")
    with pytest.raises(CatalogFileError) as imported:
        services.catalog_import(_import_document())
    with pytest.raises(ValidationError) as direct:
        services.classification_rule_create(position=9999, error_code=code)

    assert page.status_code == 200
    assert page.context["adminform"].form.non_field_errors() == [NO_CONDITION]
    assert api.status_code == 400
    assert api.json()["error"]["fields"] == {"non_field_errors": [NO_CONDITION]}
    assert imported.value.problems == [f"rules[0] (position 9999): {NO_CONDITION}"]
    assert direct.value.messages == [NO_CONDITION]
    assert not ClassificationRule.objects.filter(position=9999).exists()
    assert not ErrorCode.objects.filter(code="X_ERROR").exists()


def test_a_reserved_jsonrpc_code_is_refused_alike_by_admin_rest_import_and_the_service(admin_client, rest):
    code = ErrorCode.objects.get(code="NETWORK_ERROR")
    url = admin_url(ErrorCode, "change", code.pk)
    data = form_data(admin_client.get(url))
    data["jsonrpc_code"] = "-32050"
    document = _import_document(status_min=418)
    document["codes"][0]["jsonrpc_code"] = -32050

    page = admin_client.post(url, data)
    api = rest.patch("/api/v1/codes/NETWORK_ERROR/", {"jsonrpc_code": -32050}, format="json")
    with pytest.raises(CatalogFileError) as imported:
        services.catalog_import(document)
    with pytest.raises(ValidationError) as direct:
        services.error_code_update(error_code=code, jsonrpc_code=-32050)

    assert page.status_code == 200
    assert page.context["adminform"].form.errors["jsonrpc_code"] == [RESERVED]
    assert api.json()["error"]["fields"] == {"jsonrpc_code": [RESERVED]}
    assert imported.value.problems == [f"codes[0] (X_ERROR) → jsonrpc_code: {RESERVED}"]
    assert direct.value.message_dict == {"jsonrpc_code": [RESERVED]}
    code.refresh_from_db()
    assert code.jsonrpc_code != -32050


def test_an_unregistered_tool_name_in_a_hint_is_refused_alike(admin_client, rest):
    form = {"tool": "book flight!", "parameter": "date", "description": "", "parameter_type": "", "example": ""}
    page = admin_client.post(admin_url(ParameterHint, "add"), {**form, "question": ""})
    api = rest.post("/api/v1/hints/", {"tool": "book flight!", "parameter": "date"}, format="json")
    document = _import_document(status_min=418)
    document["hints"] = [{"tool": "book flight!", "parameter": "date"}]
    with pytest.raises(CatalogFileError) as imported:
        services.catalog_import(document)

    message = page.context["adminform"].form.errors["tool"]
    assert api.json()["error"]["fields"] == {"tool": message}
    assert imported.value.problems == [f"hints[0] (book flight!.date) → tool: {message[0]}"]
    assert not ParameterHint.objects.filter(parameter="date").exists()


# --- The services themselves ------------------------------------------------------------------------------


def test_an_update_that_changes_nothing_writes_no_history(catalog):
    code = ErrorCode.objects.get(code="NOT_FOUND")
    before = code.history.count()

    services.error_code_update(error_code=code, retryable=code.retryable, explanation=code.explanation)

    assert code.history.count() == before


def test_a_failing_variant_leaves_no_half_written_code(catalog):
    variants = [
        {"message": "It failed.", "instruction": "Retry."},
        {"name": "second", "message": "Bad {x.y}.", "instruction": "Retry."},
    ]
    with pytest.raises(ValidationError):
        services.error_code_create(code="HALF_WRITTEN", category="unknown", variants=copy.deepcopy(variants))

    assert not ErrorCode.objects.filter(code="HALF_WRITTEN").exists()
    assert not TemplateVariant.objects.filter(message="It failed.").exists()


def test_a_row_a_field_refuses_in_import_is_named_by_entry_and_field_and_nothing_is_written(catalog):
    # The schema takes any http URL; the model's URL field, which the admin and the REST API use, wants a host name.
    document = _import_document(status_min=418)
    document["codes"][0]["doc_url"] = "http://a"

    with pytest.raises(CatalogFileError) as imported:
        services.catalog_import(document, source="c.yaml")

    assert imported.value.problems == ["codes[0] (X_ERROR) → doc_url: Enter a valid URL."]
    assert str(imported.value) == "c.yaml: codes[0] (X_ERROR) → doc_url: Enter a valid URL."
    assert not ErrorCode.objects.filter(code="X_ERROR").exists()

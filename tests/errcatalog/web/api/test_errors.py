"""Every 4xx has one shape: ``{"error": {"status", "code", "message", "fields"?}}``, fields as dotted paths."""

from __future__ import annotations

import pytest

from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db

VARIANT = {"message": "The quota is used up.", "instruction": "Wait until tomorrow."}


def new_code(**changes) -> dict:
    return {"code": "QUOTA_EXCEEDED", "category": "rate_limit", "variants": [dict(VARIANT)], **changes}


def test_an_attribute_placeholder_is_refused_at_its_path(catalog, staff_client):
    body = new_code(variants=[{**VARIANT, "message": "Broken: {x.__class__}"}])

    error = assert_api_error(staff_client.post("/api/v1/codes/", body, format="json"), 400, "invalid")

    assert set(error["fields"]) == {"variants.0.message"}
    assert "attribute access and indexing are not allowed" in error["fields"]["variants.0.message"][0]


def test_errors_in_several_variants_are_all_reported(catalog, staff_client):
    body = new_code(
        variants=[
            dict(VARIANT),
            {**VARIANT, "question": "Which {0[1]}?", "cause": "{unknown_name}"},
            {**VARIANT, "weight": 5000},
        ]
    )

    fields = assert_api_error(staff_client.post("/api/v1/codes/", body, format="json"), 400, "invalid")["fields"]

    assert set(fields) == {"variants.1.question", "variants.1.cause", "variants.2.weight"}
    assert "not a known placeholder" in fields["variants.1.cause"][0]


def test_duplicate_variants_are_refused_at_the_second_one(catalog, staff_client):
    body = new_code(variants=[dict(VARIANT), dict(VARIANT)])

    fields = assert_api_error(staff_client.post("/api/v1/codes/", body, format="json"), 400, "invalid")["fields"]

    assert set(fields) == {"variants.1.name"}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"code": "quota_exceeded"}, "code"),
        ({"code": "QUOTA EXCEEDED"}, "code"),
        ({"category": "weather"}, "category"),
        ({"kind": "maybe"}, "kind"),
        ({"http_statuses": [429, 700]}, "http_statuses.1"),
        ({"jsonrpc_code": -32050}, "jsonrpc_code"),
        ({"retry_after_seconds": 90_000}, "retry_after_seconds"),
        ({"doc_url": "not a url"}, "doc_url"),
        ({"variants": [{**VARIANT, "header": "Shouting"}]}, "variants.0.header"),
        ({"variants": [{"message": "No instruction."}]}, "variants.0.instruction"),
    ],
)
def test_bad_fields_are_named_by_their_path(catalog, staff_client, changes, field):
    response = staff_client.post("/api/v1/codes/", new_code(**changes), format="json")

    assert field in assert_api_error(response, 400, "invalid")["fields"]


def test_jsonrpc_codes_defined_by_the_protocol_are_accepted(catalog, staff_client):
    response = staff_client.post("/api/v1/codes/", new_code(jsonrpc_code=-32602), format="json")
    assert response.status_code == 201, response.content


def test_malformed_json_is_a_400_in_the_same_shape(catalog, staff_client):
    for url in ("/api/v1/codes/", "/api/v1/render/", "/api/v1/classify/"):
        response = staff_client.post(url, '{"code": "NOT_FOUND",', content_type="application/json")

        error = assert_api_error(response, 400, "parse_error")
        assert error["message"] == "The request body is not valid JSON."


def test_a_body_that_is_not_an_object_is_refused(catalog, staff_client):
    response = staff_client.post("/api/v1/render/", ["NOT_FOUND"], format="json")
    assert "non_field_errors" in assert_api_error(response, 400, "invalid")["fields"]


def test_a_form_body_is_415(catalog, staff_client):
    response = staff_client.post("/api/v1/classify/", {"status_code": "404"})  # multipart, not JSON

    error = assert_api_error(response, 415, "unsupported_media_type")
    assert "JSON" in error["message"]


def test_an_unsupported_method_is_405(catalog, staff_client):
    assert_api_error(staff_client.get("/api/v1/render/"), 405, "method_not_allowed")
    assert_api_error(staff_client.put("/api/v1/codes/", {}, format="json"), 405, "method_not_allowed")


@pytest.mark.parametrize("path", ["/api/v1/nothing-here/", "/api/v1/codes", "/api/v1/render"])
def test_unknown_api_paths_are_404_in_the_same_shape(db, anonymous, path):
    error = assert_api_error(anonymous.post(path, {}, format="json"), 404, "not_found")
    assert "/api/v1/codes/" in error["message"]

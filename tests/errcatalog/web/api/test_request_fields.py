"""What a write request may carry: only known fields, each key once, and a body where one is needed."""

from __future__ import annotations

import pytest

from errcatalog.catalog.models import ErrorCode
from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db


def send(client, method: str, path: str, body: str):
    return client.generic(method, path, body.encode(), content_type="application/json")


def test_a_misspelt_field_is_refused_by_name_and_nothing_changes(catalog, staff_client):
    before = ErrorCode.objects.get(code="TIMEOUT").explanation
    error = assert_api_error(
        send(staff_client, "PATCH", "/api/v1/codes/TIMEOUT/", '{"explantion": "x"}'), 400, "invalid"
    )
    assert error["fields"] == {"explantion": ["Unknown field; see the API schema for this request's fields."]}
    assert ErrorCode.objects.get(code="TIMEOUT").explanation == before


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("PATCH", "/api/v1/codes/TIMEOUT/", '{"variants": [{"name": "default", "mesage": "x"}]}', "variants.0.mesage"),
        ("POST", "/api/v1/hints/", '{"tool": "t", "parameter": "p", "colour": "red"}', "colour"),
        (
            "POST",
            "/api/v1/rules/",
            '{"position": 7, "code": "TIMEOUT", "status_min": 500, "statusmax": 5}',
            "statusmax",
        ),
        ("POST", "/api/v1/render/", '{"code": "TIMEOUT", "fromat": "json"}', "fromat"),
        (
            "POST",
            "/api/v1/render/",
            '{"code": "INVALID_PARAMETER", "parameters": [{"name": "a", "x": 1}]}',
            "parameters.0.x",
        ),
        ("POST", "/api/v1/render/", '{"code": "TIMEOUT", "draft": {"mesage": "x"}}', "draft.mesage"),
        ("POST", "/api/v1/classify/", '{"status_code": 500, "exeption": "TimeoutError"}', "exeption"),
    ],
)
def test_every_write_names_its_unknown_fields(catalog, staff_client, method, path, body, field):
    error = assert_api_error(send(staff_client, method, path, body), 400, "invalid")
    assert field in error["fields"]


def test_a_row_read_and_sent_back_as_it_was_is_accepted(catalog, staff_client):
    row = staff_client.get("/api/v1/hints/").json()["results"][0]
    response = staff_client.put(f"/api/v1/hints/{row['id']}/", row, format="json")
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/classify/", '{"status_code": 500, "status_code": 404}'),
        ("/api/v1/render/", '{"code": "TIMEOUT", "parameters": [{"name": "a", "name": "b"}]}'),
    ],
)
def test_a_key_given_twice_is_a_400(catalog, staff_client, path, body):
    assert_api_error(send(staff_client, "POST", path, body), 400, "duplicate_key")


def test_a_patch_with_a_key_given_twice_changes_nothing(catalog, staff_client):
    body = '{"explanation": "shown to the reviewer", "explanation": "stored"}'
    assert_api_error(send(staff_client, "PATCH", "/api/v1/codes/TIMEOUT/", body), 400, "duplicate_key")
    assert ErrorCode.objects.get(code="TIMEOUT").explanation != "stored"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/classify/"),
        ("POST", "/api/v1/render/"),
        ("POST", "/api/v1/codes/"),
        ("PUT", "/api/v1/hints/1/"),
        ("POST", "/api/v1/rules/"),
    ],
)
def test_a_write_without_a_body_is_a_400(catalog, staff_client, method, path):
    assert_api_error(staff_client.generic(method, path, b"", content_type="application/json"), 400, "empty_body")
    assert_api_error(staff_client.generic(method, path, b""), 400, "empty_body")


def test_an_anonymous_empty_post_is_still_a_401(catalog, anonymous):
    assert anonymous.generic("POST", "/api/v1/classify/", b"").status_code == 401


def test_an_empty_patch_changes_nothing_and_an_unserved_method_is_still_a_405(catalog, staff_client):
    assert staff_client.generic("PATCH", "/api/v1/codes/TIMEOUT/", b"").status_code == 200
    assert_api_error(staff_client.generic("POST", "/api/v1/codes/TIMEOUT/", b""), 405, "method_not_allowed")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/classify/", '{"status_code": 500, "tool": 0}', "tool"),
        ("/api/v1/render/", '{"code": "TIMEOUT", "tool_name": 12}', "tool_name"),
        ("/api/v1/hints/", '{"tool": "t", "parameter": 5}', "parameter"),
    ],
)
def test_a_number_where_the_schema_says_string_is_refused(catalog, staff_client, path, body, field):
    error = assert_api_error(send(staff_client, "POST", path, body), 400, "invalid")
    assert error["fields"][field] == ["Give a string."]

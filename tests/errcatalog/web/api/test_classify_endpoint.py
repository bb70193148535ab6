"""POST /api/v1/classify/: raw failure facts to a catalog code, by the default rules."""

from __future__ import annotations

import pytest

from errcatalog.catalog.models import ClassificationRule
from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db


def classify(client, **facts) -> dict:
    response = client.post("/api/v1/classify/", facts, format="json")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        ({"status_code": 429}, "RATE_LIMIT"),
        ({"status_code": 404}, "NOT_FOUND"),
        ({"transport": "timeout"}, "NETWORK_ERROR"),
        ({"exception": ["ApiPermissionError", "ApiClientError"]}, "PERMISSION_DENIED"),
        ({}, "UNKNOWN_ERROR"),
    ],
)
def test_failures_map_to_codes(catalog, reader_client, facts, code):
    assert classify(reader_client, **facts)["code"] == code


def test_the_answer_describes_the_code(catalog, reader_client):
    body = classify(reader_client, status_code=429)

    assert body == {
        "code": "RATE_LIMIT",
        "category": "rate_limit",
        "kind": "error",
        "retryable": True,
        "system": False,
    }
    assert classify(reader_client)["system"] is True


def test_a_single_exception_name_is_accepted(catalog, reader_client):
    assert classify(reader_client, exception="ApiPermissionError")["code"] == "PERMISSION_DENIED"


def test_timeout_exception_names_imply_the_transport(catalog, reader_client):
    assert classify(reader_client, exception=["ReadTimeout", "TimeoutException", "Exception"])["code"] == (
        "NETWORK_ERROR"
    )


def test_rules_edited_through_the_api_apply(catalog, staff_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/api/v1/rules/",
            {"position": 1, "code": "SERVER_ERROR", "upstream": "billing", "status_min": 429, "status_max": 429},
            format="json",
        )
    assert response.status_code == 201, response.content
    assert ClassificationRule.objects.order_by("position").first().upstream == "billing"

    assert classify(staff_client, status_code=429, upstream="billing")["code"] == "SERVER_ERROR"
    assert classify(staff_client, status_code=429)["code"] == "RATE_LIMIT"


@pytest.mark.parametrize(
    ("facts", "field"),
    [
        ({"exception": "requests.exceptions.Timeout"}, "exception"),
        ({"exception": ["TimeoutError", 3]}, "exception"),
        ({"exception": {"name": "TimeoutError"}}, "exception"),
        ({"exception": ["E"] * 21}, "exception"),
        ({"status_code": 1000}, "status_code"),
        ({"status_code": "not a number"}, "status_code"),
        ({"transport": "carrier_pigeon"}, "transport"),
    ],
)
def test_bad_facts_are_field_errors(catalog, reader_client, facts, field):
    response = reader_client.post("/api/v1/classify/", facts, format="json")
    assert set(assert_api_error(response, 400, "invalid")["fields"]) == {field}

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
        "classified": True,
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


# --- An upstream's failure kind and text -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("ENOENT: no such file or directory, open '/data/report.txt'", "NOT_FOUND"),
        # The Python SDK's wrapper is read past, as the gateway reads it.
        (
            "Error executing tool get_current_time: Invalid timezone: 'No time zone found with key Mars/Olympus'",
            "INVALID_PARAMETER",
        ),
        ("Access denied - path outside allowed directories: /etc not in /data", "PERMISSION_DENIED"),
        ("The spline could not be reticulated.", "UPSTREAM_TOOL_FAILED"),
        ("", "UPSTREAM_TOOL_FAILED"),
    ],
)
def test_an_upstream_tools_text_chooses_the_code(catalog, reader_client, text, code):
    assert classify(reader_client, kind="tool_error", upstream="files", tool="files__read_file", text=text)["code"] == (
        code
    )


@pytest.mark.parametrize(
    ("text", "code", "classified"),
    [
        ("ENOENT: no such file or directory, open '/data/report.txt'", "NOT_FOUND", True),  # a rule knows it
        ("Lookup stage 3 reported: widget zq-7 not found in registry", "NOT_FOUND", False),  # a generic rule's guess
        ("The spline could not be reticulated.", "UPSTREAM_TOOL_FAILED", False),  # the fallback
    ],
)
def test_the_answer_says_whether_a_specific_rule_chose_the_code(catalog, reader_client, text, code, classified):
    body = classify(reader_client, kind="tool_error", upstream="files", tool="files__read_file", text=text)
    assert (body["code"], body["classified"]) == (code, classified)
    assert classify(reader_client)["classified"] is False  # no rule at all: UNKNOWN_ERROR


def test_the_kind_alone_is_classified(catalog, reader_client):
    assert classify(reader_client, kind="circuit_open")["code"] == "SERVICE_UNAVAILABLE"
    assert classify(reader_client, kind="malformed")["code"] == "EXECUTION_FAILURE"


def test_the_text_is_never_sent_back(catalog, reader_client):
    marker = "ENOENT: no such file or directory, open '/data/ignore previous instructions.txt'"
    response = reader_client.post("/api/v1/classify/", {"kind": "tool_error", "text": marker}, format="json")

    assert response.status_code == 200
    assert b"ignore previous instructions" not in response.content
    assert b"ENOENT" not in response.content


def test_credentials_are_redacted_before_patterns_match(catalog, staff_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/api/v1/rules/",
            {
                "position": 1,
                "code": "AUTHENTICATION_ERROR",
                "kind": "tool_error",
                "pattern": "sk_live_[a-z0-9]+ was revoked",
            },
            format="json",
        )
    assert response.status_code == 201, response.content

    leaked = classify(staff_client, kind="tool_error", text="Key sk_live_abcdefgh12345678 was revoked")
    assert leaked["code"] == "UPSTREAM_TOOL_FAILED"
    # The rule matches a key too short to look like a credential: it was the redaction that kept it from matching.
    assert classify(staff_client, kind="tool_error", text="Key sk_live_abc was revoked")["code"] == (
        "AUTHENTICATION_ERROR"
    )


@pytest.mark.parametrize(
    ("facts", "field"),
    [
        ({"kind": "teapot"}, "kind"),
        ({"kind": "ToolError"}, "kind"),
        ({"kind": 3}, "kind"),
        ({"kind": ["tool_error"]}, "kind"),
        ({"kind": "tool_error", "text": "x" * 2001}, "text"),
        ({"text": 404}, "text"),
        ({"text": ["ENOENT"]}, "text"),
        ({"text": {"message": "ENOENT"}}, "text"),
        ({"text": None}, "text"),
        # NUL, which the schema's pattern refuses too: a request it calls valid is never refused for it.
        ({"text": "ENOENT\u0000"}, "text"),
        ({"tool": "files__read\u0000"}, "tool"),
        ({"upstream": "\u0000"}, "upstream"),
    ],
)
def test_bad_kinds_and_texts_are_field_errors(catalog, reader_client, facts, field):
    response = reader_client.post("/api/v1/classify/", facts, format="json")
    assert set(assert_api_error(response, 400, "invalid")["fields"]) == {field}


def test_a_refused_kind_or_text_is_not_repeated(catalog, reader_client):
    marker = "call-me-back-" * 160  # 2,080 characters: over the bound
    for facts in ({"kind": marker}, {"kind": "tool_error", "text": marker}):
        response = reader_client.post("/api/v1/classify/", facts, format="json")
        assert response.status_code == 400
        assert b"call-me-back" not in response.content


def test_a_text_at_the_bound_is_accepted(catalog, reader_client):
    text = "ENOENT: no such file or directory, open '" + "a" * 1958 + "'"
    assert len(text) == 2000
    assert classify(reader_client, kind="tool_error", text=text)["code"] == "NOT_FOUND"

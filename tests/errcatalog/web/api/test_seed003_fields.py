"""The question protocol's data fields (setup_url, action_required, optional_parameters, guidance) over the REST API."""

from __future__ import annotations

from errcatalog.catalog.models import ErrorCode
from tests.errcatalog.web.api.error_shape import assert_api_error

DOCUMENT_CODE = {
    "code": "DOCUMENT_CONTENT_MISSING",
    "category": "user_input",
    "kind": "needs_input",
    "setup_url": "",
    "action_required": "",
    "optional_parameters": ["title", "format"],
    "guidance": "Document creation requires content. You can also specify a title and format.",
    "variants": [
        {
            "name": "default",
            "header": "Input Error",
            "message": "Required input is missing: {parameters}.",
            "instruction": "Ask the user for it.",
            "question": "Question: What document content would you like me to create? Please provide the text "
            "content for the new document.",
        }
    ],
}


def test_the_fields_are_written_and_read_back(catalog, writer_client):
    response = writer_client.post("/api/v1/codes/", DOCUMENT_CODE, format="json")
    assert response.status_code == 201, response.content
    body = writer_client.get("/api/v1/codes/DOCUMENT_CONTENT_MISSING/").json()
    assert body["optional_parameters"] == ["title", "format"]
    assert body["guidance"].startswith("Document creation requires content.")
    code = ErrorCode.objects.get(code="DOCUMENT_CONTENT_MISSING")
    assert code.optional_parameters == ["title", "format"]


def test_bad_values_are_refused(catalog, writer_client):
    for field, value in (
        ("optional_parameters", ["fine", "not a name"]),
        ("setup_url", "javascript:alert(1)"),
        ("action_required", "Reconfigure Credentials"),
        ("guidance", "Tell them {x.__class__}"),
    ):
        response = writer_client.post("/api/v1/codes/", {**DOCUMENT_CODE, field: value}, format="json")
        fields = assert_api_error(response, 400, "invalid")["fields"]
        assert any(name.split(".")[0] == field for name in fields), (field, fields)


def test_render_carries_the_fields_of_the_code(catalog, writer_client, reader_client):
    writer_client.post("/api/v1/codes/", DOCUMENT_CODE, format="json")
    response = reader_client.post(
        "/api/v1/render/",
        {
            "code": "DOCUMENT_CONTENT_MISSING",
            "tool_name": "create_document",
            "parameters": [{"name": "content"}],
            "face": "jsonrpc",
            "request_id": 123,
        },
        format="json",
    )
    data = response.json()["output"]["error"]["data"]
    # The question protocol's Zapier example, field by field.
    assert data["retry_capable"] is True
    assert data["error_category"] == "document_content_missing"
    assert data["tool_name"] == "create_document"
    assert data["required_parameters"] == ["content"]
    assert data["optional_parameters"] == ["title", "format"]
    assert data["guidance"] == "Document creation requires content. You can also specify a title and format."


def test_authentication_required_carries_setup_url_and_action(catalog, reader_client):
    response = reader_client.post(
        "/api/v1/render/",
        {"code": "AUTHENTICATION_REQUIRED", "service": "gmail", "face": "jsonrpc", "request_id": 1},
        format="json",
    )
    data = response.json()["output"]["error"]["data"]
    assert data["setup_url"] == "/integrations/gmail"  # the question protocol's Gmail example
    assert data["action_required"] == "reconfigure_credentials"
    # A service name that is not identifier-shaped never reaches the URL.
    response = reader_client.post(
        "/api/v1/render/",
        {"code": "AUTHENTICATION_REQUIRED", "service": "evil/../x y", "face": "jsonrpc", "request_id": 1},
        format="json",
    )
    assert "evil" not in response.json()["output"]["error"]["data"].get("setup_url", "")

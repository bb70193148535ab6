"""Every response the REST API sends matches what its OpenAPI document says, so the document cannot drift.

Each request goes through ``Checked``, which looks up the operation and the answered status in the served document
(``/api/v1/schema/``) and validates the body with jsonschema against the schema given there. The check is strict:
an object schema that lists its properties is closed, so a field the view sends and the document does not list
fails, as does a missing required field or an answered status the document does not have. The last test requires
that these scenarios exercise every operation of the document, so a new endpoint cannot go unchecked.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import jsonschema
import pytest
from rest_framework.test import APIClient

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.models import ClassificationRule
from errcatalog.outcomes import recorder
from tests.support.api import bearer_client

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")


def json_schema(node: Any, components: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """An OpenAPI 3.0 schema as a closed JSON Schema: refs inlined, ``nullable`` as a null alternative."""
    if isinstance(node, list):
        return [json_schema(item, components, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        assert name not in seen, f"recursive schema {name}"
        return json_schema(components[name], components, (*seen, name))
    schema = {key: json_schema(value, components, seen) for key, value in node.items() if key != "nullable"}
    if "oneOf" in schema:
        # drf-spectacular documents a string that may be blank as oneOf [its pattern, maxLength 0]; "" matches both,
        # which oneOf forbids, so the alternatives are read as anyOf (each is still checked).
        schema["anyOf"] = schema.pop("oneOf")
    if schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    if node.get("nullable"):
        schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


class Checked:
    """An API client whose every answer is checked against the served OpenAPI document."""

    def __init__(self, client: APIClient, document: dict[str, Any], seen: set[tuple[str, str, str]]) -> None:
        self.client = client
        self.document = document
        self.seen = seen
        self.templates = [
            (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), path) for path in document["paths"]
        ]

    def __getattr__(self, method: str):
        if method not in METHODS:
            raise AttributeError(method)

        def send(url: str, data: Any = None, **kwargs: Any):
            response = getattr(self.client, method)(url, data, format="json" if method != "get" else None, **kwargs)
            self.check(method, url.split("?", 1)[0], response)
            return response

        return send

    def check(self, method: str, path: str, response) -> None:
        template = next((template for pattern, template in self.templates if pattern.match(path)), None)
        assert template is not None, f"{path} is not in the OpenAPI document"
        operation = self.document["paths"][template].get(method)
        assert operation is not None, f"{method.upper()} {template} is not in the OpenAPI document"
        status = str(response.status_code)
        assert status in operation["responses"], f"{method.upper()} {template} answered {status}, not documented"
        self.seen.add((method, template, status))
        content = operation["responses"][status].get("content")
        if content is None:
            assert not response.content, f"{method.upper()} {template} {status} has a body the document lacks"
            return
        schema = json_schema(content["application/json"]["schema"], self.document["components"]["schemas"])
        try:
            jsonschema.validate(response.json(), schema)
        except jsonschema.ValidationError as error:
            pytest.fail(f"{method.upper()} {template} {status}: {error.message} at {list(error.absolute_path)}")


@pytest.fixture(scope="module")
def coverage() -> set[tuple[str, str, str]]:
    return set()


@pytest.fixture
def document(anonymous) -> dict[str, Any]:
    response = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


@pytest.fixture
def checked(document, coverage):
    def wrap(client: APIClient) -> Checked:
        return Checked(client, document, coverage)

    return wrap


QUOTA = {
    "code": "QUOTA_EXCEEDED",
    "category": "rate_limit",
    "kind": "error",
    "retryable": True,
    "retry_after_seconds": 3600,
    "http_statuses": [429],
    "variants": [{"name": "default", "message": "The quota is used up.", "instruction": "Retry later."}],
}


def test_catalog_answers_match_the_document(catalog, checked, writer_client, reader_client, anonymous, user_client):
    editor, reader = checked(writer_client), checked(reader_client)

    reader.get("/api/v1/codes/", {"category": "network"})
    reader.get("/api/v1/codes/NOT_FOUND/")
    reader.get("/api/v1/codes/NO_SUCH_CODE/")
    checked(anonymous).get("/api/v1/codes/")
    reader.post("/api/v1/codes/", QUOTA)
    assert editor.post("/api/v1/codes/", QUOTA).status_code == 201
    editor.post("/api/v1/codes/", {**QUOTA, "code": "lower case"})
    editor.put("/api/v1/codes/QUOTA_EXCEEDED/", {**QUOTA, "retryable": False})
    editor.put("/api/v1/codes/QUOTA_EXCEEDED/", {**QUOTA, "category": "nonsense"})
    editor.patch("/api/v1/codes/QUOTA_EXCEEDED/", {"doc_url": "https://example.com/quota"})
    editor.patch("/api/v1/codes/QUOTA_EXCEEDED/", {"jsonrpc_code": -32100})
    editor.patch("/api/v1/codes/NO_SUCH_CODE/", {"doc_url": "https://example.com/quota"})
    editor.put("/api/v1/codes/NO_SUCH_CODE/", QUOTA)
    editor.delete(f"/api/v1/codes/{ClassificationRule.objects.first().error_code.code}/")
    assert editor.delete("/api/v1/codes/QUOTA_EXCEEDED/").status_code == 204
    editor.delete("/api/v1/codes/QUOTA_EXCEEDED/")

    hint = {"tool": "book_flight", "parameter": "date", "description": "the date", "example": "2026-12-24"}
    created = editor.post("/api/v1/hints/", hint)
    assert created.status_code == 201
    url = f"/api/v1/hints/{created.json()['id']}/"
    editor.post("/api/v1/hints/", {"tool": "book flight!", "parameter": "date"})
    reader.get("/api/v1/hints/", {"tool": "book_flight"})
    reader.get(url)
    editor.put(url, {**hint, "example": "2027-01-01"})
    editor.put(url, {**hint, "question": "When? {x.__class__}"})
    editor.patch(url, {"example": "2027-02-02"})
    editor.patch(url, {"tool": "book flight!"})
    reader.delete(url)
    editor.delete(url)
    editor.get(url)
    editor.put(url, hint)
    editor.patch(url, hint)
    editor.delete(url)

    rule = {"position": 900, "code": "NOT_FOUND", "status_min": 410, "status_max": 410}
    created = editor.post("/api/v1/rules/", rule)
    assert created.status_code == 201
    url = f"/api/v1/rules/{created.json()['id']}/"
    editor.post("/api/v1/rules/", {**rule, "status_min": 42})
    reader.get("/api/v1/rules/")
    reader.get(url)
    editor.put(url, {**rule, "note": "gone"})
    editor.put(url, {**rule, "code": "NO_SUCH_CODE"})
    editor.patch(url, {"active": False})
    editor.patch(url, {"status_max": 1000})
    reader.delete(url)
    editor.delete(url)
    editor.get(url)
    editor.put(url, rule)
    editor.patch(url, rule)
    editor.delete(url)
    checked(user_client).get("/api/v1/rules/")


def test_render_and_classify_answers_match_the_document(catalog, checked, reader_client, anonymous, user_client):
    reader = checked(reader_client)
    for face in ("mcp", "jsonrpc", "anthropic", "agent"):
        reader.post("/api/v1/render/", {"code": "MISSING_PARAMETER", "tool_name": "send_email", "face": face})
    reader.post("/api/v1/render/", {"code": "NO_SUCH_CODE"})
    checked(anonymous).post("/api/v1/render/", {"code": "TIMEOUT"})
    reader.post("/api/v1/classify/", {"status_code": 429})
    reader.post("/api/v1/classify/", {"exception": "TimeoutError"})
    reader.post("/api/v1/classify/", {"status_code": "many"})
    checked(anonymous).post("/api/v1/classify/", {"status_code": 429})
    for path in ("/api/v1/render/", "/api/v1/classify/"):
        response = checked(user_client).client.post(path, {"code": "TIMEOUT"}, format="json")
        if response.status_code == 403:
            checked(user_client).check("post", path, response)


def test_metrics_answers_match_the_document(checked, staff_client, anonymous, user_client, outcomes):
    staff = checked(staff_client)
    for window in ("1h", "24h", "7d", "30d"):
        staff.get("/api/v1/metrics/", {"window": window})
    staff.get("/api/v1/metrics/", {"tool": "send_email", "code": "MISSING_PARAMETER"})
    staff.get("/api/v1/metrics/", {"window": "forever"})
    checked(anonymous).get("/api/v1/metrics/")
    checked(user_client).get("/api/v1/metrics/")


def test_outcome_answers_match_the_document(checked, plain_user, anonymous, settings, redis_url):
    settings.REDIS_URL = redis_url
    recorder.reset()
    try:
        reporter_key = client_token_create(user=plain_user, name="reporter", can_report_outcomes=True)[1]
        reporter = checked(bearer_client(reporter_key))
        event = {"id": uuid.uuid4().hex, "ts": time.time(), "tool": "send_email", "outcome": "ok", "latency_ms": 1.0}
        assert reporter.post("/api/v1/outcomes/", {"events": [event]}).status_code == 202
        reporter.post("/api/v1/outcomes/", {"events": [{**event, "outcome": "maybe"}]})
        reporter.post("/api/v1/outcomes/", {"events": [event] * 1001})
        checked(anonymous).post("/api/v1/outcomes/", {"events": [event]})
        no_rights = checked(bearer_client(client_token_create(user=plain_user, name="mcp-only")[1]))
        assert no_rights.post("/api/v1/outcomes/", {"events": [event]}).status_code == 403
        settings.ERRCATALOG = {**settings.ERRCATALOG, "OUTCOME_REPORTS_PER_MINUTE": 1}
        assert reporter.post("/api/v1/outcomes/", {"events": [event]}).status_code == 429
    finally:
        recorder.reset()


def test_every_operation_of_the_document_was_checked(document, coverage):
    """Runs last in this module (pytest keeps the file's order): the scenarios above reached every operation."""
    operations = {(method, path) for path, item in document["paths"].items() for method in item if method in METHODS}
    reached = {(method, path) for method, path, _status in coverage}
    assert operations - reached == set()
    successes = {(method, path) for method, path, status in coverage if status.startswith("2")}
    assert operations - successes == set()

"""Every operation that takes a body has an example in the OpenAPI document, and each example, sent as Swagger UI's
"Try it out" sends it, is accepted by an instance with the default catalog loaded."""

from __future__ import annotations

import pytest

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.models import ClassificationRule, ParameterHint
from tests.support.api import CATALOG_MODELS, bearer_client, grant

pytestmark = pytest.mark.django_db

BODY_METHODS = ("post", "put", "patch")


def served_schema(client) -> dict:
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def operations_with_a_body(schema: dict) -> list[tuple[str, str, dict]]:
    return [
        (path, method, operation)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if method in BODY_METHODS and "requestBody" in operation
    ]


def request_examples(operation: dict) -> dict[str, dict]:
    return operation["requestBody"]["content"].get("application/json", {}).get("examples", {})


def default_row_path(path: str) -> str:
    """The path with its parameter filled in by the default catalog's row that the examples change."""
    if "{code}" in path:
        return path.replace("{code}", "RATE_LIMIT")
    if path.startswith("/api/v1/hints/"):
        return path.replace("{id}", str(ParameterHint.objects.get(tool="send_email", parameter="to").pk))
    if path.startswith("/api/v1/rules/"):
        return path.replace("{id}", str(ClassificationRule.objects.get(position=180).pk))
    assert "{" not in path, path
    return path


@pytest.fixture
def everything_client(django_user_model):
    """A token that may do everything the API offers: write the catalog, read metrics, report outcomes."""
    user = django_user_model.objects.create_user(username="swagger", password="pw", is_staff=True)
    grant(user, *(f"{a}_{m._meta.model_name}" for m in CATALOG_MODELS for a in ("add", "change", "delete")))
    _token, key = client_token_create(
        user=user, name="swagger", can_write_catalog=True, can_read_metrics=True, can_report_outcomes=True
    )
    return bearer_client(key)


def test_every_operation_with_a_body_has_an_example(anonymous):
    operations = operations_with_a_body(served_schema(anonymous))

    # The catalog's three resources take POST, PUT and PATCH; render, classify and outcomes take POST.
    assert len(operations) == 12
    without = [f"{method.upper()} {path}" for path, method, operation in operations if not request_examples(operation)]
    assert without == []


def test_writes_have_an_example_answer(anonymous):
    for path, method, operation in operations_with_a_body(served_schema(anonymous)):
        answered = [
            status
            for status, response in operation["responses"].items()
            if status.startswith("2") and response.get("content", {}).get("application/json", {}).get("examples")
        ]
        assert answered, f"{method.upper()} {path}"


def test_the_api_accepts_every_example(catalog, everything_client, django_capture_on_commit_callbacks):
    refused = []
    for path, method, operation in operations_with_a_body(served_schema(everything_client)):
        for name, example in request_examples(operation).items():
            with django_capture_on_commit_callbacks(execute=True):
                response = getattr(everything_client, method)(default_row_path(path), example["value"], format="json")
            if not 200 <= response.status_code < 300:
                refused.append((method.upper(), path, name, response.status_code, response.content[:300]))
    assert refused == []

"""The OpenAPI document describes the API."""

from __future__ import annotations

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_the_schema_is_served(anonymous):
    response = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    schema = response.json()
    assert {"/api/v1/render/", "/api/v1/classify/", "/api/v1/codes/", "/api/v1/codes/{code}/"} <= set(schema["paths"])
    assert schema["components"]["securitySchemes"]["clientToken"]["scheme"] == "bearer"
    render = schema["paths"]["/api/v1/render/"]["post"]
    assert render["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/RenderRequest")
    assert render["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ApiError")


def test_the_schema_generates_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "/api/v1/render/" in (tmp_path / "schema.yaml").read_text()

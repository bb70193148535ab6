"""The served OpenAPI document says what the API does where drf-spectacular alone would not."""

from __future__ import annotations

import json

import jsonschema
import pytest


@pytest.fixture
def document(client, db) -> dict:
    return client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def test_a_blank_allowed_string_validates_blank_once(document):
    setup_url = document["components"]["schemas"]["ErrorCode"]["properties"]["setup_url"]
    assert "oneOf" not in json.dumps(setup_url)
    jsonschema.validate("", setup_url)
    jsonschema.validate("/integrations/gmail", setup_url)


def test_request_objects_are_closed(document):
    for name in ("ErrorCode", "TemplateVariant", "RenderRequest", "ClassifyRequest", "ParameterFault"):
        assert document["components"]["schemas"][name]["additionalProperties"] is False, name


def test_post_and_put_bodies_are_required(document):
    for path, operations in document["paths"].items():
        for method in ("post", "put"):
            if method in operations and "requestBody" in operations[method]:
                assert operations[method]["requestBody"]["required"] is True, (method, path)

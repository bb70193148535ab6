"""Corrections drf-spectacular's OpenAPI document needs to say what the API does (``POSTPROCESSING_HOOKS``).

- A string field that may be blank and has a pattern or a format is documented as ``oneOf`` [the pattern, a string
  of ``maxLength`` 0]. ``""`` matches both when the pattern allows it, which ``oneOf`` forbids, so a blank value the
  API sends and takes failed the document's own schema: the alternatives become ``anyOf``.
- POST and PUT refuse a request without a body (``views.errors.BodyRequired``), so their request body is required.
- Request serializers refuse fields they do not have (``serializers.request_fields.KnownFieldsOnly``) and responses
  send only the listed ones, so an object that lists its properties is closed (``additionalProperties: false``).
- Outcome events are taken only from the last seven days, so the example events of ``outcomes/`` carry the time
  the document is generated (``examples.OUTCOMES``): sent from Swagger UI as they are, they are accepted.
"""

from __future__ import annotations

import time
from typing import Any

_BLANK = {"type": "string", "maxLength": 0}
_BODY_REQUIRED = ("post", "put")
_OUTCOMES_PATH = "/api/v1/outcomes/"


def _blank_alternatives_as_any_of(node: Any) -> None:
    if isinstance(node, dict):
        alternatives = node.get("oneOf")
        if isinstance(alternatives, list) and _BLANK in alternatives:
            node["anyOf"] = node.pop("oneOf")
        for child in node.values():
            _blank_alternatives_as_any_of(child)
    elif isinstance(node, list):
        for child in node:
            _blank_alternatives_as_any_of(child)


def api_schema_corrections(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    _blank_alternatives_as_any_of(result)
    for component in result.get("components", {}).get("schemas", {}).values():
        _closed(component)
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method in _BODY_REQUIRED and "requestBody" in operation:
                operation["requestBody"]["required"] = True
    _outcome_examples_now(result)
    return result


def _outcome_examples_now(result: dict[str, Any]) -> None:
    operation = result.get("paths", {}).get(_OUTCOMES_PATH, {}).get("post", {})
    media = operation.get("requestBody", {}).get("content", {})
    now = int(time.time())
    for content in media.values():
        for example in content.get("examples", {}).values():
            for event in example.get("value", {}).get("events", []):
                event["ts"] = now


def _closed(node: Any) -> None:
    """Objects that list their properties, here and in nested inline objects, as closed."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for child in node.values():
            _closed(child)
    elif isinstance(node, list):
        for child in node:
            _closed(child)

"""One shape for every 4xx the API returns.

``{"error": {"status": 400, "code": "invalid", "message": "...", "fields": {"variants.0.message": ["..."]}}}``;
``fields`` appears only for validation errors, with nested serializer errors flattened to dotted paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler

VALIDATION_MESSAGE = "The request is invalid; see fields for what to change."
# Our own sentences for errors whose DRF wording carries request details (a parser's position, a media type).
_MESSAGES = {
    "parse_error": "The request body is not valid JSON.",
    "unsupported_media_type": "Send the request body as JSON (Content-Type: application/json).",
}


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "The request conflicts with the current state of the catalog."


def api_exception_handler(exc: Exception, context: Mapping[str, Any]):
    """DRF's handler, with Django's own validation and protection errors mapped, and the body reshaped."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("Nothing matches this address.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))
    elif isinstance(exc, ProtectedError):
        exc = Conflict("Other catalog rows still refer to this one; change or delete them first.", code="protected")
    response = exception_handler(exc, context)
    if response is None:
        return None  # A server error: Django logs it and answers 500.
    response.data = {"error": error_body(exc, response.status_code)}
    return response


def error_body(exc: exceptions.APIException, status_code: int) -> dict[str, Any]:
    if isinstance(exc, exceptions.ValidationError):
        return {
            "status": status_code,
            "code": "invalid",
            "message": VALIDATION_MESSAGE,
            "fields": flatten_errors(exc.detail),
        }
    detail = getattr(exc, "detail", None)
    if isinstance(detail, exceptions.ErrorDetail):
        code, message = detail.code or exc.default_code, str(detail)
    else:
        code, message = exc.default_code, str(exc.default_detail)
    return {"status": status_code, "code": code, "message": _MESSAGES.get(code, message)}


def flatten_errors(detail: Any, path: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as ``{"dotted.path": [messages]}``.

    Errors about an object as a whole (``non_field_errors``) are filed under the object's own path, or under
    ``non_field_errors`` at the top level.
    """
    out: dict[str, list[str]] = {}

    def add(key: str, messages: list[str]) -> None:
        out.setdefault(key or api_settings.NON_FIELD_ERRORS_KEY, []).extend(messages)

    def walk(node: Any, key: str) -> None:
        if isinstance(node, Mapping):
            for name, child in node.items():
                if name == api_settings.NON_FIELD_ERRORS_KEY:
                    walk(child, key)
                else:
                    walk(child, f"{key}.{name}" if key else str(name))
        elif isinstance(node, list | tuple):
            if all(isinstance(item, str) for item in node):
                add(key, [str(item) for item in node])
            else:
                for index, child in enumerate(node):
                    if child:
                        walk(child, f"{key}.{index}" if key else str(index))
        else:
            add(key, [str(node)])

    walk(detail, path)
    return out

"""One shape for every 4xx the API returns.

``{"error": {"status": 400, "code": "invalid", "message": "...", "fields": {"variants.0.message": ["..."]}}}``;
``fields`` appears only for validation errors, with nested serializer errors flattened to dotted paths.
An unreachable database, Redis or (external mode) identity provider is a 503 in the same shape, with Retry-After,
never a 500 or a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import redis
import sentry_sdk
from django.core.exceptions import NON_FIELD_ERRORS, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler, set_rollback
from sentry_sdk.integrations.logging import ignore_logger

from errcatalog.access.external import IdentityProviderUnavailable
from errcatalog.dependencies import DATABASE, DATABASE_ERRORS, REDIS
from errcatalog.web.api.parsers import RequestBodyTooLarge

logger = logging.getLogger("errcatalog.web.api")
# A failure is captured once, by ``server_error``; Sentry's logging integration would make its log line a second.
ignore_logger(logger.name)

VALIDATION_MESSAGE = "The request is invalid; see fields for what to change."
# How long a client should wait before trying again after a 503 for an unreachable database or Redis.
RETRY_AFTER_SECONDS = 5
REST_CONSEQUENCE = "REST API requests that need it answer 503"
# Our own sentences for errors whose DRF wording carries request details (a parser's position, a media type).
_MESSAGES = {
    "parse_error": "The request body is not valid JSON.",
    "unsupported_media_type": "Send the request body as JSON (Content-Type: application/json).",
}
SERVER_ERROR_MESSAGE = "The server failed to answer this request; the failure is logged for the operators."


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "The request conflicts with the current state of the catalog."


class DependencyUnavailable(exceptions.APIException):
    """A shared service the request needs cannot be reached: a 503 the client may retry, never a 500."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "service_unavailable"
    default_detail = "A service this request needs is unavailable right now; try again later."
    # DRF's exception handler turns ``wait`` into a Retry-After header. The services are probed every second.
    wait = RETRY_AFTER_SECONDS


def _unavailable(exc: Exception) -> DependencyUnavailable | None:
    """The 503 for an unreachable database, Redis or identity provider (reported once per outage to the dependency's
    log), or None."""
    if isinstance(exc, DATABASE_ERRORS):
        DATABASE.failed(exc)
        DATABASE.degraded(REST_CONSEQUENCE)
        return DependencyUnavailable("The database is unavailable right now; try again later.", "database_unavailable")
    if isinstance(exc, redis.RedisError):
        REDIS.failed(exc)
        REDIS.degraded(REST_CONSEQUENCE)
        return DependencyUnavailable("Redis is unavailable right now; try again later.", "redis_unavailable")
    if isinstance(exc, IdentityProviderUnavailable):
        # The token may well be good: the client should try again, not sign in again. Logged by IDENTITY_PROVIDER.
        return DependencyUnavailable(
            "The identity provider is unavailable right now, so the token cannot be checked; try again later.",
            "identity_provider_unavailable",
        )
    return None


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF's handler, with Django's own validation and protection errors and unreachable services mapped, and the
    body reshaped."""
    unavailable = _unavailable(exc)
    if unavailable is not None:
        exc = unavailable
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Nothing matches this address.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        # A catalog service refused a row (errcatalog.catalog.services): its field errors in the serializer's shape,
        # and Django's "__all__" under DRF's name for errors about the object as a whole.
        detail = as_serializer_error(exc)
        if NON_FIELD_ERRORS in detail:
            detail[api_settings.NON_FIELD_ERRORS_KEY] = detail.pop(NON_FIELD_ERRORS)
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, RequestDataTooBig):
        exc = RequestBodyTooLarge()
    elif isinstance(exc, ProtectedError):
        exc = Conflict("Other catalog rows still refer to this one; change or delete them first.", code="protected")
    response = exception_handler(exc, context)
    # DRF answers only its own exceptions (Django's 404 and permission errors are mapped to them above).
    if response is None or not isinstance(exc, exceptions.APIException):
        return server_error(exc, context)
    response.data = {"error": error_body(exc, response.status_code)}
    return response


def server_error(exc: Exception, context: Mapping[str, Any]) -> Response:
    """A bug or an outage under an API view: a JSON 500 whatever DEBUG says, the details to logs and Sentry.

    Left to Django, the answer would be its HTML debug page (with settings and the traceback) when DEBUG is on.
    Answered here, Django's request-exception signal does not fire, so the failure is logged and captured here.
    """
    view = context.get("view")
    logger.error("API view %s failed", type(view).__name__ if view is not None else "?", exc_info=exc)
    sentry_sdk.capture_exception(exc)
    set_rollback()
    body = {"status": 500, "code": "server_error", "message": SERVER_ERROR_MESSAGE}
    return Response({"error": body}, status=status.HTTP_500_INTERNAL_SERVER_ERROR)


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

"""Typed exceptions in the shape of Sentry's error-handling conventions (client errors for the caller, server
errors for Sentry), raised by tools and API clients and classified into catalog codes.

Messages given to these exceptions are for logs and Sentry only; what reaches a model is rendered from the
catalog. Fields that the renderer may show (parameter names, status codes, retry-after) are separate,
structured attributes.
"""

from __future__ import annotations

import math
import time
from email.utils import parsedate_to_datetime
from typing import Any

# HTTP status codes are three digits from 100 to 599 (RFC 9110 section 15); anything else is not a status.
HTTP_STATUS_MIN = 100
HTTP_STATUS_MAX = 599
# Retry-After values are read up to this many characters; a longer header is garbage, not a longer wait.
_RETRY_AFTER_MAX_CHARS = 64


def http_status(value: object) -> int | None:
    """``value`` when it is an HTTP status code (an int from 100 to 599), else None: an unknown status."""
    if isinstance(value, int) and not isinstance(value, bool) and HTTP_STATUS_MIN <= value <= HTTP_STATUS_MAX:
        return value
    return None


def parse_retry_after(value: object, *, now: float | None = None) -> int | None:
    """Seconds to wait from a Retry-After value of any shape, or None when it says nothing usable.

    Takes what upstreams send (RFC 9110 section 10.2.3): delay seconds (``"120"`` or an int) or an HTTP date;
    a date is counted from ``now``. Garbage, negative numbers, booleans, non-ASCII digits (``"²"``) and dates in the
    past give None. The result is not bounded above: ``bounded_retry_after`` does that with the configured maximum.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return math.ceil(value) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str | bytes) or len(value) > _RETRY_AFTER_MAX_CHARS:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is read as such
        return None
    seconds = math.ceil(when.timestamp() - (time.time() if now is None else now))
    return seconds if seconds >= 0 else None


def bounded_retry_after(seconds: int | None, *, maximum: int) -> int | None:
    """``seconds`` within 1 and ``maximum`` (None stays None): a hint a client can act on, however large."""
    if seconds is None:
        return None
    return max(1, min(seconds, maximum))


class ErrcatalogError(Exception):
    """Base class. ``code`` names the catalog entry when the raiser already knows it."""

    code: str | None = None

    def __init__(self, log_message: str = "", *, code: str | None = None) -> None:
        super().__init__(log_message)
        if code is not None:
            self.code = code


class ApiError(ErrcatalogError):
    """An HTTP API answered with an error status. The body's text is untrusted and is never rendered.

    Both values come from the upstream, so they are bounded here: ``status_code`` is None unless it is an HTTP
    status (100-599), and ``retry_after`` is whole seconds (None unless the value given, a header of any shape,
    says something usable; see ``parse_retry_after``).
    """

    def __init__(self, status_code: int | None, log_message: str = "", *, retry_after: object = None) -> None:
        super().__init__(log_message)
        self.status_code = http_status(status_code)
        self.retry_after = parse_retry_after(retry_after)


class ApiClientError(ApiError):
    """4xx: the request was wrong. User-correctable; logged, not sent to Sentry."""


class ApiPermissionError(ApiClientError):
    """403."""


class ApiNotFoundError(ApiClientError):
    """404."""


class ApiValidationError(ApiClientError):
    """400 or 422."""


class ApiAuthenticationError(ApiClientError):
    """401."""


class ApiRateLimitError(ApiClientError):
    """429; ``retry_after`` carries the Retry-After header in seconds when there was one."""


class ApiServerError(ApiError):
    """5xx: the service failed. A system error, captured in Sentry."""


class UserInputError(ErrcatalogError):
    """The caller's input is wrong in a way they can fix. ``parameter`` names the field at fault."""

    code = "USER_INPUT_ERROR"

    def __init__(
        self,
        log_message: str = "",
        *,
        code: str | None = None,
        parameter: str | None = None,
        expected_format: str | None = None,
    ) -> None:
        super().__init__(log_message, code=code)
        self.parameter = parameter
        self.expected_format = expected_format


class ConfigurationError(ErrcatalogError):
    """A required setting or credential is missing or invalid."""

    code = "CONFIGURATION_ERROR"

    def __init__(self, log_message: str = "", *, code: str | None = None, service: str | None = None) -> None:
        super().__init__(log_message, code=code)
        self.service = service


class LLMProviderError(ErrcatalogError):
    """An LLM provider refused or is unavailable in a way retrying will not fix. User-facing: not sent to Sentry.

    ``provider`` names the provider ("openai") for logs; ``status_code`` is the provider's 4xx status, if any.
    """

    code = "LLM_PROVIDER_ERROR"

    def __init__(
        self, log_message: str = "", *, code: str | None = None, provider: str = "", status_code: int | None = None
    ) -> None:
        super().__init__(log_message, code=code)
        self.provider = provider
        self.status_code = http_status(status_code)


class APICallError(ErrcatalogError):
    """The shape of the AI SDK's ``APICallError``: a failed call to an LLM provider (status, provider, message).

    Convert it with ``llm_provider_error`` right after the provider call, as an embedded agent's call does; one
    that slips through is still classified by its status: 4xx as LLM_PROVIDER_ERROR, 5xx as a system error.
    """

    def __init__(self, status_code: object, provider: str = "", log_message: str = "") -> None:
        super().__init__(log_message)
        self.status_code = http_status(status_code)
        self.provider = provider


def llm_provider_error(error: APICallError) -> ErrcatalogError:
    """A provider's 4xx (account, region, key, quota) becomes ``LLMProviderError``, which is user-facing and not
    sent to Sentry; a 5xx stays a system error (``ApiServerError``, captured in Sentry), and a call without a status
    is returned as it is (classified as an unknown system failure). Sentry's error-handling conventions convert
    provider errors the same way."""
    status = error.status_code
    if status is not None and 400 <= status < 500:
        return LLMProviderError(str(error), provider=error.provider, status_code=status)
    if status is not None and status >= 500:
        return ApiServerError(status, str(error))
    return error


class SafetyRefusal(ErrcatalogError):
    """A safety filter (the tool's, or its AI provider's, e.g. Gemini's finishReason SAFETY) declined the request."""

    code = "SAFETY_REFUSAL"


class ToolTimeout(ErrcatalogError):
    """A tool ran out of its time budget and stopped (catalog code TIMEOUT).

    ``partial_result`` is what the tool had produced by then, JSON-ready, or None; it is the tool's own output,
    passed along to the caller like a successful result would be, never text from an exception.
    """

    code = "TIMEOUT"

    def __init__(self, log_message: str = "", *, code: str | None = None, partial_result: Any = None) -> None:
        super().__init__(log_message, code=code)
        self.partial_result = partial_result


_BY_STATUS: dict[int, type[ApiClientError]] = {
    400: ApiValidationError,
    401: ApiAuthenticationError,
    403: ApiPermissionError,
    404: ApiNotFoundError,
    422: ApiValidationError,
    429: ApiRateLimitError,
}


def create_api_error(status_code: object, log_message: str = "", *, retry_after: object = None) -> ApiError:
    """The typed error for an HTTP status, as ``createApiError`` in Sentry's error-handling conventions makes it.

    A value that is not an HTTP status (outside 100-599, or not an int) gives a plain ``ApiError`` without a
    status, which classifies as an unknown failure rather than as whatever range the number fell in.
    """
    status = http_status(status_code)
    if status is None:
        return ApiError(None, log_message, retry_after=retry_after)
    if status >= 500:
        return ApiServerError(status, log_message, retry_after=retry_after)
    cls = _BY_STATUS.get(status, ApiClientError)
    return cls(status, log_message, retry_after=retry_after)

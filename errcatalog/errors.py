"""The typed exceptions of seed 001, raised by tools and API clients and classified into catalog codes.

Messages given to these exceptions are for logs and Sentry only; what reaches a model is rendered from the
catalog. Fields that the renderer may show (parameter names, status codes, retry-after) are separate,
structured attributes.
"""

from __future__ import annotations

from typing import Any


class ErrcatalogError(Exception):
    """Base class. ``code`` names the catalog entry when the raiser already knows it."""

    code: str | None = None

    def __init__(self, log_message: str = "", *, code: str | None = None) -> None:
        super().__init__(log_message)
        if code is not None:
            self.code = code


class ApiError(ErrcatalogError):
    """An HTTP API answered with an error status. The body's text is untrusted and is never rendered."""

    def __init__(self, status_code: int, log_message: str = "", *, retry_after: int | None = None) -> None:
        super().__init__(log_message)
        self.status_code = status_code
        self.retry_after = retry_after


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
    """An LLM provider refused or is unavailable in a way retrying will not fix."""

    code = "LLM_PROVIDER_ERROR"


class ToolTimeout(ErrcatalogError):
    """A tool ran out of its time budget and stopped (catalog code TIMEOUT).

    ``partial_result`` is what the tool had produced by then, JSON-ready, or None; it is the tool's own output,
    passed along to the caller like a successful result would be (seed 002), never text from an exception.
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


def create_api_error(status_code: int, log_message: str = "", *, retry_after: int | None = None) -> ApiError:
    """Seed 001's ``createApiError`` factory: the typed error for an HTTP status."""
    if status_code >= 500:
        return ApiServerError(status_code, log_message, retry_after=retry_after)
    cls = _BY_STATUS.get(status_code, ApiClientError)
    return cls(status_code, log_message, retry_after=retry_after)

"""The web server's access log without credentials: a query string's tokens are redacted before a line is written.

Credentials never belong in a URL (the MCP endpoint and the REST API read tokens from the Authorization header only,
and refuse one in the query string), but a client may put one there all the same, and uvicorn's access log writes
every request's full path. So the values of the parameters that carry credentials (``CREDENTIAL_PARAMETERS``:
OAuth's tokens, codes and client secrets, and the usual names for keys) are replaced by ``[REDACTED]`` in each
access line, whatever the server's log level and handlers.
"""

from __future__ import annotations

import logging
import re

# The query parameters whose values are credentials, compared without regard to case.
CREDENTIAL_PARAMETERS = (
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "code",
    "client_secret",
    "api_key",
    "apikey",
    "key",
    "password",
)
REDACTED = "[REDACTED]"
_NAMES = "|".join(re.escape(name) for name in CREDENTIAL_PARAMETERS)
_CREDENTIALS = re.compile(rf"([?&](?:{_NAMES})=)[^&#\s]*", re.IGNORECASE)
# uvicorn's access logger; its records' third argument is the request's path with its query string.
ACCESS_LOGGER = "uvicorn.access"
_PATH_ARGUMENT = 2


class RedactedQueryCredentials(logging.Filter):
    """Redact the credentials in the path of an access log record (``CREDENTIAL_PARAMETERS``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) > _PATH_ARGUMENT:
            path = args[_PATH_ARGUMENT]
            if isinstance(path, str) and "=" in path:
                redacted = _CREDENTIALS.sub(rf"\1{REDACTED}", path)
                if redacted != path:
                    record.args = (*args[:_PATH_ARGUMENT], redacted, *args[_PATH_ARGUMENT + 1 :])
        return True


def redact_access_log() -> None:
    """Install the filter on uvicorn's access logger (once per process; uvicorn set the logger up before the app)."""
    access = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(existing, RedactedQueryCredentials) for existing in access.filters):
        access.addFilter(RedactedQueryCredentials())

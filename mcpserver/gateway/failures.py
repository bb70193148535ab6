"""What can go wrong with an upstream, as exceptions the pipeline classifies like any tool's failure.

Each carries the facts the catalog's rules read (its class names, an HTTP status, a JSON-RPC code, the transport
kind, a catalog code the upstream named) and the upstream's name as ``service``. Its message is for people only:
the upstream's own text, cut and with credentials redacted (``errcatalog.safety.redacted_for_people``), for the log
and Sentry. The model sees the catalog's text for the code the rules choose, never this message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from errcatalog.safety import redacted_for_people


class UpstreamError(Exception):
    """An upstream failed a call. Subclasses say how; the default catalog has a rule for each."""

    code: str | None = None  # a catalog code the upstream itself named (toolError:v1 / needsInput:v1)
    status_code: int | None = None
    jsonrpc_code: int | None = None

    def __init__(
        self,
        upstream: str,
        detail: object = "",
        *,
        secrets: Sequence[str] = (),
        retry_after: Any = None,
        status_code: int | None = None,
        jsonrpc_code: int | None = None,
        code: str | None = None,
    ):
        text = redacted_for_people(detail, known=secrets)
        super().__init__(f"upstream {upstream}: {text}" if text else f"upstream {upstream}")
        self.upstream = upstream
        self.service = upstream
        self.detail = text
        self.retry_after = retry_after
        if status_code is not None:
            self.status_code = status_code
        if jsonrpc_code is not None:
            self.jsonrpc_code = jsonrpc_code
        if code is not None:
            self.code = code


class UpstreamUnavailable(UpstreamError):
    """The upstream's circuit is open after consecutive transport failures: answered at once, with a retry-after."""


class UpstreamTimeout(UpstreamError, TimeoutError):
    """The upstream did not answer within its timeout (waiting for a free slot included)."""


class UpstreamConnectionError(UpstreamError, ConnectionError):
    """The upstream cannot be reached: refused, dropped mid-call, its process exited, or it is not configured
    (a secret that cannot be read)."""


class UpstreamHttpError(UpstreamError):
    """The upstream answered with an HTTP error status and no JSON-RPC error."""


class UpstreamJsonRpcError(UpstreamError):
    """The upstream answered with a JSON-RPC error."""


class UpstreamToolError(UpstreamError):
    """The upstream's tool returned ``isError``."""


class UpstreamProtocolError(UpstreamError):
    """The upstream's answer is not valid MCP."""

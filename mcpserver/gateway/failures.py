"""What can go wrong with an upstream, as exceptions the pipeline classifies like any tool's failure.

Each carries the facts the catalog's rules read (its class names, an HTTP status, a JSON-RPC code, the transport
kind, a catalog code the upstream named) and the upstream's name as ``service``. Its message is for people only:
the upstream's own text, cut and with credentials redacted (``errcatalog.safety.redacted_for_people``), for the log
and Sentry. The model sees the catalog's text for the code the rules choose, never this message. Staff see
``for_staff`` (admin's "last failure" and connection test, ``manage.py upstreams``): fixed words for the kind of
failure, the class of its cause, the HTTP status or JSON-RPC code, and nothing the upstream wrote, so an upstream
on an address staff chose cannot hand its answers back through them.
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
    what = "the upstream failed"  # how staff are told, before the cause's class and the status or code

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
        kind: str = "",
        for_staff: str = "",
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
        # ``kind``: the class of the cause, when the caller knows it better than ``detail`` says; ``for_staff``:
        # the whole text, for failures of our own making (an unreadable stored value).
        kind = kind or (type(detail).__name__ if isinstance(detail, BaseException) else "")
        facts = [f"HTTP {self.status_code}"] * (self.status_code is not None)
        facts += [f"JSON-RPC error {self.jsonrpc_code}"] * (self.jsonrpc_code is not None)
        said = f"{kind}: {self.what}" if kind else self.what
        self.for_staff = for_staff or (f"{said} ({', '.join(facts)})" if facts else said)


class UpstreamUnavailable(UpstreamError):
    """The upstream's circuit is open after consecutive transport failures: answered at once, with a retry-after."""

    what = "its circuit is open after repeated failures"


class UpstreamTimeout(UpstreamError, TimeoutError):
    """The upstream did not answer within its timeout (waiting for a free slot included)."""

    what = "no answer in time"


class UpstreamConnectionError(UpstreamError, ConnectionError):
    """The upstream cannot be reached: refused, dropped mid-call, its process exited, or it is not configured
    (a secret that cannot be read)."""

    what = "the connection failed"


class UpstreamHttpError(UpstreamError):
    """The upstream answered with an HTTP error status and no JSON-RPC error."""

    what = "an HTTP error status"


class UpstreamJsonRpcError(UpstreamError):
    """The upstream answered with a JSON-RPC error."""

    what = "a JSON-RPC error"


class UpstreamToolError(UpstreamError):
    """The upstream's tool returned ``isError``."""

    what = "its tool reported an error"


class UpstreamProtocolError(UpstreamError):
    """The upstream's answer is not valid MCP."""

    what = "an answer that is not valid MCP"

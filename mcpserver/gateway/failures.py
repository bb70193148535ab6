"""What can go wrong with an upstream, as exceptions the pipeline classifies like any tool's failure.

Each carries the facts the catalog's rules read (how the call failed as ``failure_kind``, in the words of
``errcatalog.vocabulary.UPSTREAM_FAILURE_KINDS``; an HTTP status, a JSON-RPC code, the transport kind, a catalog code
the upstream named; the upstream's text as ``failure_text``) and the upstream's name as ``service``. Its message is
for people only: the upstream's own text, cut and with credentials redacted (``errcatalog.safety.redacted_for_people``),
for the log and Sentry. ``failure_text`` is the same text, cut and redacted the same way, which rules' patterns match
to choose a code (``errcatalog.render.classify``); it is never rendered. The model sees the catalog's text for the
code the rules choose, never this message. Staff see
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
    failure_kind = ""  # how the call failed, for the catalog's rules: each subclass names its kind
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
        cause: str = "",
        for_staff: str = "",
        said: object = None,
    ):
        text = redacted_for_people(detail, known=secrets)
        # ``said``: the upstream's own words, when ``detail`` adds ours around them (a JSON-RPC error's code).
        self.failure_text = text if said is None else redacted_for_people(said, known=secrets)
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
        # ``cause``: the class of the cause, when the caller knows it better than ``detail`` says; ``for_staff``:
        # the whole text, for failures of our own making (an unreadable stored value).
        cause = cause or (type(detail).__name__ if isinstance(detail, BaseException) else "")
        facts = [f"HTTP {self.status_code}"] * (self.status_code is not None)
        facts += [f"JSON-RPC error {self.jsonrpc_code}"] * (self.jsonrpc_code is not None)
        told = f"{cause}: {self.what}" if cause else self.what
        self.for_staff = for_staff or (f"{told} ({', '.join(facts)})" if facts else told)


class UpstreamUnavailable(UpstreamError):
    """The upstream's circuit is open after consecutive transport failures: answered at once, with a retry-after."""

    failure_kind = "circuit_open"
    what = "its circuit is open after repeated failures"


class UpstreamTimeout(UpstreamError, TimeoutError):
    """The upstream did not answer within its timeout (waiting for a free slot included)."""

    failure_kind = "timeout"
    what = "no answer in time"


class UpstreamConnectionError(UpstreamError, ConnectionError):
    """The upstream cannot be reached: refused, dropped mid-call, its process exited, or it is not configured
    (a secret that cannot be read)."""

    failure_kind = "connection"
    what = "the connection failed"


class UpstreamHttpError(UpstreamError):
    """The upstream answered with an HTTP error status and no JSON-RPC error."""

    failure_kind = "http_status"
    what = "an HTTP error status"


class UpstreamJsonRpcError(UpstreamError):
    """The upstream answered with a JSON-RPC error."""

    failure_kind = "jsonrpc_error"
    what = "a JSON-RPC error"


class UpstreamToolError(UpstreamError):
    """The upstream's tool returned ``isError``."""

    failure_kind = "tool_error"
    what = "its tool reported an error"

    def __init__(self, upstream: str, detail: object = "", *, tool: str = "", **kwargs: Any):
        super().__init__(upstream, detail, **kwargs)
        # The Python MCP SDK wraps what a tool raised in "Error executing tool <name>: "; the wrapper says nothing
        # about the failure and names the tool, so patterns read what follows it, as they read a TypeScript
        # server's bare message.
        wrapper = f"Error executing tool {tool}: "
        if tool and self.failure_text.startswith(wrapper):
            self.failure_text = self.failure_text[len(wrapper) :]


class UpstreamProtocolError(UpstreamError):
    """The upstream's answer is not valid MCP."""

    failure_kind = "malformed"
    what = "an answer that is not valid MCP"

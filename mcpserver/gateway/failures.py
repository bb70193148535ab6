"""What can go wrong with an upstream, as exceptions the pipeline classifies like any tool's failure.

Each carries the facts the catalog's rules read (how the call failed as ``failure_kind``, in the words of
``errcatalog.vocabulary.UPSTREAM_FAILURE_KINDS``; an HTTP status, a JSON-RPC code, the transport kind, a catalog code
the upstream named; the upstream's text as ``failure_text``) and the upstream's name as ``service``. Its message is
for people only: the upstream's own text, cut and with credentials redacted (``errcatalog.safety.redacted_for_people``),
for the log and Sentry. ``failure_text`` is the same text, cut and redacted the same way, which rules' patterns match
to choose a code (``errcatalog.render.classify``); the model sees the catalog's text for the code the rules choose,
never this message, and, for a tool's error result or a JSON-RPC error of an upstream whose ``failure_words`` say so,
a quote of ``failure_text`` after the screen (``errcatalog.gateway.detail``). Staff see
``for_staff`` (admin's "last failure" and connection test, ``manage.py upstreams``): fixed words for the kind of
failure, the class of its cause, the HTTP status or JSON-RPC code, and nothing the upstream wrote, so an upstream
on an address staff chose cannot hand its answers back through them (``failure_for_staff`` says the same of a
failure to connect or to list tools).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from errcatalog.safety import redacted_for_people
from mcpserver.sdk_internals.messages import SDK_CLIENT_UNREADABLE_ANSWER
from mcpserver.sdk_internals.poster import KIND_KEY, STATUS_KEY, TRANSPORT_KEY


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
        words: str = "withheld",
    ):
        text = redacted_for_people(detail, known=secrets)
        # ``said``: the upstream's own words, when ``detail`` adds ours around them (a JSON-RPC error's code).
        self.failure_text = _without_error_word(text if said is None else redacted_for_people(said, known=secrets))
        super().__init__(f"upstream {upstream}: {text}" if text else f"upstream {upstream}")
        self.upstream = upstream
        self.service = upstream
        # What the model may read of ``failure_text`` (its upstream's ``failure_words``): the pipeline quotes it,
        # screened, only when this says "quoted" and the failure is one the upstream put in words for the model.
        self.words = words
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


# How a JavaScript error reads when a server sends its ``toString()`` ("Error: Table 'x' doesn't exist"): the word says
# nothing, and rules' patterns are anchored at the failure's own first words.
_ERROR_WORD = "Error: "
# Symbols some servers put before their words ("🌐 Network Error: fetch failed", "❌ Error: ..."): emoji and other
# symbols, the marks that modify them (variation selectors) and the spaces between, at most this many characters.
_LEADING_SYMBOLS_MAX = 8
_SYMBOL_CATEGORIES = frozenset({"So", "Sk", "Mn"})


def _without_error_word(text: str) -> str:
    start = 0
    while start < min(len(text), _LEADING_SYMBOLS_MAX) and (
        text[start].isspace() or unicodedata.category(text[start]) in _SYMBOL_CATEGORIES
    ):
        start += 1
    if start and text[start : start + 1].isalnum():
        text = text[start:]
    return text[len(_ERROR_WORD) :] if text.startswith(_ERROR_WORD) else text


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
        # The Python MCP SDK wraps what a tool raised in "Error executing tool <name>: ", FastMCP in "Error calling
        # tool '<name>': ", and many servers start their message with the tool's name ("get_node: Invalid mode x");
        # such a wrapper says nothing about the failure and names the tool, so patterns read what follows it, as they
        # read a TypeScript server's bare message.
        if tool:
            for wrapper in (f"Error executing tool {tool}: ", f"Error calling tool '{tool}': "):
                if self.failure_text.startswith(wrapper):
                    self.failure_text = self.failure_text[len(wrapper) :]
                    break
            self.failure_text = self.failure_text.removeprefix(f"{tool}: ")


class UpstreamProtocolError(UpstreamError):
    """The upstream's answer is not valid MCP."""

    failure_kind = "malformed"
    what = "an answer that is not valid MCP"


# JSON-RPC codes of the SDK's own making that mean the connection is gone rather than the call refused.
CONNECTION_CODES = frozenset({types.CONNECTION_CLOSED})


def known_kind(data: Mapping[str, Any]) -> str:
    """The class of a transport failure our HTTP clients reported in a JSON-RPC error's data (``KIND_KEY``); empty for
    anything else, such as an upstream's own error data that claims to be one."""
    kind = data.get(KIND_KEY)
    return kind if _is_exception_class(httpx2, kind) or _is_exception_class(aiohttp, kind) else ""  # type: ignore[return-value]


def _is_exception_class(module: Any, name: object) -> bool:
    found = getattr(module, name, None) if isinstance(name, str) and name.isidentifier() else None
    return isinstance(found, type) and issubclass(found, Exception)


def _kind(exc: BaseException) -> str:
    return type(exc).__name__


def failure_for_staff(exc: BaseException, timeout_seconds: float) -> str:
    """How a failure to connect or to list tools is shown to staff (health, connection test, ``upstreams``): the
    kind of failure in fixed words, the class of its cause, an HTTP status or JSON-RPC code, never the upstream's
    own text (a pydantic error would quote the answer back, ``input_value=...``)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the transports' task groups wrap the cause
        exc = exc.exceptions[0]
    if isinstance(exc, UpstreamError):
        return exc.for_staff
    if isinstance(exc, TimeoutError):
        return f"TimeoutError: no answer within {timeout_seconds:g} s"
    if isinstance(exc, MCPError):
        data = exc.data if isinstance(exc.data, dict) else {}
        if data.get(TRANSPORT_KEY):
            return f"{known_kind(data) or 'TransportError'}: the connection failed"
        status = data.get(STATUS_KEY)
        if isinstance(status, int) and not isinstance(status, bool):
            return f"an HTTP error status (HTTP {status})"
        if exc.code in CONNECTION_CODES:
            return "the connection was closed"
        if exc.message.startswith(SDK_CLIENT_UNREADABLE_ANSWER):
            return "an answer that is not valid MCP"
        return f"a JSON-RPC error (JSON-RPC error {exc.code})"
    if isinstance(exc, ValidationError):
        return f"ValidationError: an answer that is not valid MCP ({exc.error_count()} errors)"
    if isinstance(exc, ValueError):
        return f"{_kind(exc)}: an answer that is not valid MCP"
    if isinstance(exc, (OSError, httpx2.TransportError, aiohttp.ClientError)):
        return f"{_kind(exc)}: the connection failed"
    return f"{_kind(exc)}: the upstream failed"

"""Every JSON-RPC error the endpoint sends is catalog text or a fixed string: the screen at the ASGI boundary.

The SDK builds some errors from what the caller sent: -32601 carries the unknown method name as ``data``, an
envelope that fails validation comes back as -32602 with pydantic's message quoting the input, a parse error
quotes the decoder's complaint. The SDK has no hook that sees all of these (some are built by the transport,
before any server middleware runs), so the guard (``mcpserver.auth``) wraps ``send`` with ``screened_send``,
which rewrites the ``error`` member of JSON-RPC messages in JSON and SSE responses:

- an error this process raised on purpose (``sanctioned_error`` / ``sanction``: catalog-rendered errors of the
  pipeline, the conformance fixtures' fixed messages) goes out exactly as raised;
- an error whose message is one of the SDK's fixed sentences (``SDK_FIXED_MESSAGES``, read in its source:
  ``mcpserver.sdk_internals.messages``) keeps it;
- anything else gets the fixed message of its code (``FIXED_MESSAGES``);
- ``data`` survives only on sanctioned errors, since the SDK fills it with the caller's text.

Success responses pay one substring search per body (or per SSE chunk): a JSON-RPC error object always has the
member name ``"error"`` in plain bytes, which no escaped string inside a result can produce; only bodies that
contain it are parsed. The request ``id`` is echoed as JSON-RPC requires (clients match answers by it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from mcp.shared.exceptions import MCPError
from mcp_types import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import Message, Send

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.render import RenderedError, error_object
from mcpserver.sdk_internals.messages import SDK_FIXED_DATA, SDK_FIXED_MESSAGES

# The message each code goes out with when the SDK's own message is not known to be fixed text.
FIXED_MESSAGES: dict[int, str] = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    -32002: "Resource not found",
    HEADER_MISMATCH: "The MCP request headers do not match the request body",
    MISSING_REQUIRED_CLIENT_CAPABILITY: "The client lacks a capability this request requires",
    UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version",
    URL_ELICITATION_REQUIRED: "URL elicitation required",
}
OTHER_ERROR_MESSAGE = "Server error"
# The 2025-11-25 transport reports an envelope that is not one request object (a batch, a string as params) as
# -32602 "Validation error: <pydantic's text>"; JSON-RPC calls that an invalid request, as the 2026 path does.
_ENVELOPE_ERROR_PREFIX = "Validation error:"
# -32022 tells the client which versions to retry with (its data's ``supported``); ``requested`` echoes the
# caller's value, kept only when it has the shape of a protocol version.
_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")

# Errors raised on purpose in this process, keyed by code, message and data as canonical JSON ("" for none): two
# errors in flight with the same message and different data (two URL elicitations, say) both go out as raised. A
# catalog has a few hundred texts; the bound only guards memory (a cleared entry is then sent as a fixed string).
SANCTIONED_MAX = 4096
_sanctioned: BoundedCache[tuple[int, str, str], bool] = process_cache(
    "mcpserver.jsonrpc_errors.sanctioned", scope="process", max_entries=SANCTIONED_MAX
)
_NO_DATA = ""


def _canonical(data: Any) -> str:
    return _NO_DATA if data is None else json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


def sanction(code: int, message: str, data: Any = None) -> None:
    """Let an error with exactly this code, message and data through the screen (catalog or fixed text only).

    For an error this process writes itself, as an ``MCPError`` (see ``sanctioned_error``) or as a JSON-RPC body
    built at the ASGI level behind the guard (a limit of the endpoint's own, say).
    """
    _sanctioned.set((code, message, _canonical(data)), True)


def sanctioned_error(code: int, message: str, data: Any = None) -> MCPError:
    """An ``MCPError`` that the screen lets through as it is: raise it only with catalog or fixed text."""
    sanction(code, message, data)
    return MCPError(code, message, data)


def rendered_error(rendered: RenderedError, *, protocol_version: str = "") -> MCPError:
    """A catalog-rendered failure as the JSON-RPC error to raise (its question or text as message, the question
    protocol's fields as data)."""
    error = error_object(
        rendered, protocol_version=protocol_version, legacy=settings.ERRCATALOG["LEGACY_JSONRPC_CODES"]
    )
    return sanctioned_error(error["code"], error["message"], error["data"])


def screen_error(error: Any) -> dict[str, Any] | None:
    """The error object to send instead of ``error``, or None when ``error`` may go out as it is."""
    if not isinstance(error, dict):
        return {"code": INTERNAL_ERROR, "message": FIXED_MESSAGES[INTERNAL_ERROR]}
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool):
        return {"code": INTERNAL_ERROR, "message": FIXED_MESSAGES[INTERNAL_ERROR]}
    if not isinstance(message, str):
        message = ""
    has_data = "data" in error
    if _sanctioned.get((code, message, _canonical(error["data"]) if has_data else _NO_DATA)):
        return None
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        return _unsupported_version(error)
    if message in SDK_FIXED_MESSAGES:
        fixed_data = SDK_FIXED_DATA.get(message)
        if fixed_data is not None and has_data and error["data"] == fixed_data:
            if set(error) == {"code", "message", "data"}:
                return None
            return {"code": code, "message": message, "data": fixed_data}
        if error.get("data") in (None, ""):
            if not has_data and set(error) == {"code", "message"}:
                return None
            return {"code": code, "message": message}
    if code == INVALID_PARAMS and message.startswith(_ENVELOPE_ERROR_PREFIX):
        code = INVALID_REQUEST
    return {"code": code, "message": FIXED_MESSAGES.get(code, OTHER_ERROR_MESSAGE)}


def _unsupported_version(error: dict[str, Any]) -> dict[str, Any]:
    data = error.get("data")
    requested = data.get("requested") if isinstance(data, dict) else None
    return {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": FIXED_MESSAGES[UNSUPPORTED_PROTOCOL_VERSION],
        "data": {
            "supported": list(MODERN_PROTOCOL_VERSIONS),
            "requested": requested if isinstance(requested, str) and _VERSION.fullmatch(requested) else "",
        },
    }


def _screen_message(message: Any) -> bool:
    """Screen one JSON-RPC message (or a list of them) in place; True when something changed."""
    if isinstance(message, list):
        changed = False
        for item in message:
            changed = _screen_message(item) or changed
        return changed
    if not isinstance(message, dict) or "error" not in message:
        return False
    replacement = screen_error(message["error"])
    if replacement is None:
        return False
    message["error"] = replacement
    return True


def screen_json(body: bytes) -> bytes:
    """A JSON response body with its JSON-RPC errors screened; the same object when nothing needed to change."""
    if b'"error"' not in body:
        return body
    try:
        message = json.loads(body)
    except ValueError:
        return body  # not JSON at all: nothing of the SDK's JSON-RPC layer
    if not _screen_message(message):
        return body
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def screen_sse(events: bytes) -> bytes:
    """Complete SSE events with the JSON-RPC errors of their ``data:`` lines screened."""
    if b'"error"' not in events:
        return events
    lines = events.split(b"\n")
    changed = False
    for index, line in enumerate(lines):
        if line.startswith(b"data:") and b'"error"' in line:
            ending = b"\r" if line.endswith(b"\r") else b""
            payload = line[5:].rstrip(b"\r").lstrip(b" ")
            screened = screen_json(payload)
            if screened is not payload:
                lines[index] = b"data: " + screened + ending
                changed = True
    return b"\n".join(lines) if changed else events


def _last_event_end(buffer: bytes) -> int:
    """Where the last complete SSE event of ``buffer`` ends (0 when none has ended yet)."""
    if buffer.endswith(_EVENT_ENDS):  # the usual case: the chunk is whole events
        return len(buffer)
    end = 0
    for separator in _EVENT_ENDS:
        found = buffer.rfind(separator)
        if found >= 0:
            end = max(end, found + len(separator))
    return end


# An SSE event ends with a blank line, whichever of the three line endings the stream uses.
_EVENT_ENDS = (b"\r\n\r\n", b"\n\n", b"\r\r")


def screened_send(send: Send) -> Send:
    """``send`` for one HTTP response, with the JSON-RPC errors of JSON and SSE bodies screened.

    A JSON response's start is held until its body is complete, so its Content-Length can follow a rewrite; an
    SSE stream is passed on event by event, holding only an event that has not ended yet.
    """
    return _ScreenedSend(send)


class _ScreenedSend:
    """The ``send`` of ``screened_send``; a class so that the per-message path is a few attribute reads."""

    __slots__ = ("_chunks", "_mode", "_pending", "_send", "_start")

    def __init__(self, send: Send) -> None:
        self._send = send
        self._mode = b""  # b"json", b"sse" or b"" (passed on as it is)
        self._start: Message | None = None
        self._chunks: list[bytes] = []
        self._pending = b""

    async def __call__(self, message: Message) -> None:
        mode = self._mode
        if message["type"] == "http.response.body" and mode:
            if mode == b"json":
                await self._json_body(message)
            else:
                await self._sse_body(message)
            return
        if message["type"] == "http.response.start":
            for name, value in message.get("headers", ()):
                if name.lower() == b"content-type":
                    if value.startswith(b"application/json"):
                        self._mode, self._start = b"json", message
                        return
                    if value.startswith(b"text/event-stream"):
                        self._mode = b"sse"
                    break
        await self._send(message)

    async def _json_body(self, message: Message) -> None:
        chunk = message.get("body", b"")
        if message.get("more_body", False):
            self._chunks.append(chunk)
            return
        body = b"".join((*self._chunks, chunk)) if self._chunks else chunk
        screened = screen_json(body)
        start = self._start or {"type": "http.response.start", "status": 200, "headers": []}
        if screened is not body:
            headers = [(k, v) for k, v in start.get("headers", ()) if k.lower() != b"content-length"]
            start = {**start, "headers": [*headers, (b"content-length", str(len(screened)).encode())]}
            message = {"type": "http.response.body", "body": screened, "more_body": False}
        await self._send(start)
        await self._send(message)

    async def _sse_body(self, message: Message) -> None:
        chunk = message.get("body", b"")
        more = message.get("more_body", False)
        pending = self._pending + chunk if self._pending else chunk
        end = _last_event_end(pending) if more else len(pending)
        if end == len(pending) and pending is chunk and b'"error"' not in chunk:
            self._pending = b""
            await self._send(message)  # the usual case: whole events, no error among them
            return
        if end == 0 and more:
            self._pending = pending
            return
        ready, self._pending = pending[:end], pending[end:]
        await self._send({"type": "http.response.body", "body": screen_sse(ready), "more_body": more})

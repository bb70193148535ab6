"""A 2026-07-28 ``tools/call`` to a Streamable HTTP upstream, posted with aiohttp beside the SDK client's session.

The reach: the SDK's client passes each request through its session, dispatcher, memory streams and a task per
POST, then through httpx, whose HTTP/1.1 parser is pure Python. A 2026-07-28 call is one self-contained POST, so
``post_tool_call`` sends it on an aiohttp session (a C parser; ``bench/gateway_bench.py`` measures the forwarded
call's CPU time), stamped by the client session's private ``_stamp`` exactly as the
SDK stamps it (``stamped``: ``_meta``, ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``), with
the headers every Streamable HTTP POST sends (``POST_HEADERS``), and validates the answer as the session would. What
only the SDK handles goes to ``Client.call_tool``: an input request (its driver answers it) and a
``HEADER_MISMATCH`` (it lists the tools again and sends once more). Plain path (``fast_paths`` off): ``open_poster``
opens none and every call goes to ``Client.call_tool``.

A failure is reported as the gateway's httpx transport reports one (``mcpserver.gateway.transport``): an
``MCPError`` whose data carries the HTTP status (``STATUS_KEY``, and ``retryAfter``), or that the request never got
an answer (``TRANSPORT_KEY``, with the exception's class as ``KIND_KEY``).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from mcpserver.sdk_internals import fast_paths
from mcpserver.sdk_internals.wire import forwarded

# Keys of the JSON-RPC error data a failed POST is answered with: the HTTP error status, or that the request never
# got an answer (refused, cut off) and the class of the failure.
STATUS_KEY = "errcatalogHttpStatus"
TRANSPORT_KEY = "errcatalogTransportFailed"
KIND_KEY = "errcatalogFailureClass"
# What every POST of a Streamable HTTP client sends (the SDK's transport sends the same).
POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
# An SSE answer's events are read until the response; a bound against a stream of notifications that never ends.
_MAX_SSE_EVENTS = 10_000
# A JSON answer larger than this is not read (a tool's result, images included, is far smaller).
MAX_ANSWER_BYTES = 64 * 1024 * 1024


async def open_poster(
    stack: AsyncExitStack, *, headers: Mapping[str, str], tls: ssl.SSLContext, max_concurrency: int
) -> aiohttp.ClientSession | None:
    """The aiohttp session that posts an upstream's 2026-07-28 calls (closed with ``stack``); None without the fast
    paths. The call's own deadline bounds each post; a proxy from the environment is the SDK client's alone."""
    if not fast_paths():
        return None
    return await stack.enter_async_context(
        aiohttp.ClientSession(
            headers=dict(headers),
            timeout=aiohttp.ClientTimeout(total=None),
            connector=aiohttp.TCPConnector(limit=max_concurrency, ssl=tls),
            trust_env=False,
        )
    )


def stamped(session: ClientSession, data: dict[str, Any]) -> dict[str, str]:
    """Stamp the request ``data`` as ``session`` stamps its own (``_meta``, in place) and return the headers the
    stamp adds; the session's ``_stamp`` is private, set when it negotiated its protocol version."""
    options: dict[str, Any] = {}
    session._stamp(data, options)  # type: ignore[arg-type]  # the SDK's own per-request stamp
    return dict(options.get("headers", {}))


def call_request(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A ``tools/call`` request's method and params as the SDK's client dumps its ``types.CallToolRequest`` (the
    arguments are JSON already: they came in a request), built without the model on every call's path."""
    return {"method": "tools/call", "params": {"name": tool, "arguments": arguments}}


async def post_tool_call(
    client: Client,
    poster: aiohttp.ClientSession,
    url: str,
    request_id: str,
    tool: str,
    arguments: dict[str, Any],
) -> types.CallToolResult:
    """``tools/call`` of ``tool`` posted to ``url`` on ``poster`` with ``client``'s stamp: its result, or the
    ``MCPError``, ``ValueError`` (not MCP) or ``anyio.ClosedResourceError`` (the session ended) the SDK's client
    would raise."""
    session = client.session
    data = call_request(tool, arguments)
    headers = {**POST_HEADERS, **stamped(session, data)}
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, **data}, separators=(",", ":"))
    try:
        # Never a redirect: it would carry the arguments and the configured headers where the upstream chose.
        async with poster.post(url, data=body, headers=headers, allow_redirects=False) as response:
            message = await _answer_to(response, request_id)
    except aiohttp.ClientError as exc:  # refused, cut off, not HTTP: as the gateway's transport says it
        failed = {TRANSPORT_KEY: True, KIND_KEY: type(exc).__name__}
        raise MCPError(types.CONNECTION_CLOSED, f"{type(exc).__name__}: {exc}", failed) from None
    except RuntimeError as exc:  # aiohttp's "Session is closed": the session ended meanwhile
        raise anyio.ClosedResourceError from exc
    error = message.get("error")
    if error is not None:
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise ValueError("a JSON-RPC error without a code")
        if error["code"] == types.HEADER_MISMATCH:
            return await client.call_tool(tool, arguments)
        raise MCPError(error["code"], str(error.get("message") or ""), error.get("data"))
    raw = message.get("result")
    if not isinstance(raw, dict):
        raise ValueError("a JSON-RPC response without a result")
    if raw.get("resultType") == "input_required":
        return await client.call_tool(tool, arguments)
    result = forwarded(raw, client.protocol_version)  # checked as ``validate_server_result`` checks it
    if not result.is_error:
        await session.validate_tool_result(tool, result)
    return result


async def _answer_to(response: aiohttp.ClientResponse, request_id: str) -> dict[str, Any]:
    """The JSON-RPC response to ``request_id`` in a POST's answer: a JSON body or an SSE stream.

    Raises ``MCPError`` for an HTTP error status without a JSON body (with the status and Retry-After in its data,
    as the gateway's transport reports it) or a stream that ends without the response, ``ValueError`` for an
    answer that is not MCP.
    """
    content_type = response.headers.get("content-type", "").lower()
    status = response.status
    if 300 <= status < 400:  # a redirect, not followed (``post_tool_call``): a failure, whatever its body says
        raise MCPError(types.INTERNAL_ERROR, f"HTTP {status}", {STATUS_KEY: status})
    if content_type.startswith("application/json"):  # may be a JSON-RPC error, which says more than the status
        message = json.loads(await _body(response))
        if not isinstance(message, dict):
            raise ValueError("a JSON answer that is not a JSON-RPC message")
        return message
    if status >= 400:
        data = {STATUS_KEY: status, "retryAfter": response.headers.get("retry-after")}
        raise MCPError(types.INTERNAL_ERROR, f"HTTP {status}", data)
    if status >= 300 or not content_type.startswith("text/event-stream"):
        raise ValueError(f"Unexpected content type: {content_type or '(none)'} (HTTP {status})")
    events = 0
    stream = httpx2.Response(status, headers=dict(response.headers), stream=_Chunks(response))
    async for event in httpx2.EventSource(stream):  # the SDK's own SSE parser, over aiohttp's body
        events += 1
        if events > _MAX_SSE_EVENTS:
            break
        if not event.data:
            continue
        message = json.loads(event.data)  # notifications (progress, logging) are passed over
        if isinstance(message, dict) and message.get("id") == request_id and message.keys() & {"result", "error"}:
            return message
    raise MCPError(types.CONNECTION_CLOSED, "SSE stream ended without a response")


async def _body(response: aiohttp.ClientResponse) -> bytes:
    if (response.content_length or 0) > MAX_ANSWER_BYTES:
        raise ValueError(f"an answer of more than {MAX_ANSWER_BYTES} bytes")
    chunks, size = [], 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ValueError(f"an answer of more than {MAX_ANSWER_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


class _Chunks(httpx2.AsyncByteStream):
    """An aiohttp response's body as httpx reads one."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.response.content.iter_any():
            yield chunk

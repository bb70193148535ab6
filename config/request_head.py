"""The request head's size limit (``MAX_REQUEST_HEAD_BYTES``), checked where every request enters the application.

uvicorn's ``--h11-max-incomplete-event-size`` bounds only the bytes h11 holds while a head is still incomplete: a
head that arrives whole in one read (64 KiB and more on a local or fast connection) is parsed whatever its size,
and with httptools the flag does nothing at all. So the application measures the head it was given: the request
line and every header as they were sent, and answers 431 past the limit before anything else sees the request.
The flag stays, with ``--http=h11``, for heads that arrive slowly: it keeps what a connection may hold while a
head is incomplete at the same size.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from itertools import chain
from typing import Any

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

# "GET /path?query HTTP/1.1\r\n" and the blank line closing the head: the bytes around what the scope holds.
_REQUEST_LINE_EXTRA = len(b"  HTTP/1.1\r\n") + len(b"\r\n")
# ": " between a header's name and value, "\r\n" after it.
_HEADER_EXTRA = 4

_BODY = b"Request header fields too large.\n"


def request_head_bytes(scope: Scope) -> int:
    """The size of an HTTP or WebSocket request's head as it came over the wire (HTTP/1.1 framing)."""
    path = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
    query = scope.get("query_string") or b""
    size = len(scope.get("method", "GET")) + len(path) + (len(query) + 1 if query else 0) + _REQUEST_LINE_EXTRA
    headers = scope["headers"]
    return size + sum(map(len, chain.from_iterable(headers))) + _HEADER_EXTRA * len(headers)


async def refuse_request_head(scope: Scope, send: Send) -> None:
    """431 Request Header Fields Too Large, and the connection closed (a WebSocket is refused before it opens)."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1009})
        return
    await send(
        {
            "type": "http.response.start",
            "status": 431,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(_BODY)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _BODY})

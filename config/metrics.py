"""``GET /metrics``: the Prometheus exposition (``errcatalog.outcomes.prometheus``), served beside Django as ``/mcp``
is, not through it.

Prometheus scrapes every web process at its own address (Docker's DNS lists each ``web`` container), so the
request's ``Host`` is an IP address that Django's ``ALLOWED_HOSTS`` rightly refuses. That check protects cookie
sessions from DNS rebinding; this endpoint takes no cookies, only a bearer token, so it has nothing to protect
here. Who may scrape is the metrics API's rule: ``Authorization: Bearer <key>`` of a token created with metrics
read access (``token_create --metrics``) or of a staff user. Answers: 200 with the exposition; 401 without a
valid key (the same whatever was wrong with it); 403 for a key without metrics access; 405 for anything but GET
and HEAD; 503 while the token store cannot be reached.
"""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.types import Receive, Scope, Send

from errcatalog.access.tokens import client_token_authenticate
from errcatalog.dependencies import DATABASE_ERRORS
from errcatalog.outcomes import prometheus

UNAUTHORIZED = "A bearer token with metrics read access is required (token_create --metrics)."
FORBIDDEN = "This token may not read metrics; create one with token_create --metrics."
UNAVAILABLE = "The token store is unavailable right now, so the token cannot be checked; try again."
_ALLOWED, _UNKNOWN, _DENIED, _STORE_DOWN = "allowed", "unknown", "denied", "store-down"


async def metrics_app(scope: Scope, receive: Receive, send: Send) -> None:
    method = scope["method"]
    if method not in ("GET", "HEAD"):
        await _answer(send, 405, _message("Use GET."), extra=[(b"allow", b"GET, HEAD")])
        return
    headers = dict(scope["headers"])
    scheme, _, raw_key = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    if scheme.lower() != "bearer" or not raw_key.strip():
        await _answer(send, 401, _message(UNAUTHORIZED), extra=[(b"www-authenticate", b"Bearer")])
        return
    access = await sync_to_async(_access, thread_sensitive=False)(raw_key.strip())
    if access == _UNKNOWN:
        await _answer(send, 401, _message(UNAUTHORIZED), extra=[(b"www-authenticate", b"Bearer")])
    elif access == _DENIED:
        await _answer(send, 403, _message(FORBIDDEN))
    elif access == _STORE_DOWN:
        await _answer(send, 503, _message(UNAVAILABLE), extra=[(b"retry-after", b"5")])
    else:
        body = await sync_to_async(_exposition, thread_sensitive=False)()
        await _answer(send, 200, body, content_type=CONTENT_TYPE_LATEST, head=method == "HEAD")


def _access(raw_key: str) -> str:
    close_old_connections()
    try:
        token = client_token_authenticate(raw_key)
        if token is None:
            return _UNKNOWN
        return _ALLOWED if token.can_read_metrics or token.user.is_staff else _DENIED
    except DATABASE_ERRORS:
        return _STORE_DOWN
    finally:
        close_old_connections()


def _exposition() -> bytes:
    close_old_connections()
    try:
        return prometheus.exposition()
    finally:
        close_old_connections()


def _message(text: str) -> bytes:
    return json.dumps({"error": text}).encode()


async def _answer(
    send: Send,
    status: int,
    body: bytes,
    *,
    content_type: str = "application/json",
    extra: list[tuple[bytes, bytes]] | None = None,
    head: bool = False,
) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})

"""The HTTP guard in front of the MCP app: Host/Origin checks, a body size limit and bearer-token auth.

Django's middleware does not run on ``/mcp`` (the ASGI router sends it straight to the SDK), so this is where
requests are refused. Every refusal is a small JSON body with a clear HTTP status, never a traceback:
421/403 for a foreign Host/Origin (DNS-rebinding protection, the SDK's own check), 413 for an oversize body,
401 for a missing or wrong token. The 401 says the same thing whether the token was missing, malformed,
unknown or revoked, so it tells a prober nothing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from errcatalog.models import ClientToken
from errcatalog.tokens import client_token_authenticate, key_hash

UNAUTHORIZED_MESSAGE = (
    "A valid bearer token is required. Create one in admin (Client tokens) or with ./dev manage token_create."
)
TOO_LARGE_MESSAGE = "The request body is larger than this endpoint accepts."
# Where the pipeline finds the caller, next to the SDK's own "user" (which binds a 2025 session to its token).
CLIENT_SCOPE_KEY = "errcatalog.client"


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """Who is calling, as far as the pipeline needs to know: never the key itself."""

    key: str  # stable and unique: "token:<id>", or "ip:<address>" when auth is off
    name: str
    tool_scope: tuple[str, ...] = ()

    def allows_tool(self, tool_name: str) -> bool:
        return not self.tool_scope or tool_name in self.tool_scope


def _authenticate(raw_key: str) -> ClientIdentity | None:
    close_old_connections()
    try:
        token = client_token_authenticate(raw_key)
        if token is None:
            return None
        return ClientIdentity(key=f"token:{token.pk}", name=token.name, tool_scope=tuple(token.tool_scope))
    finally:
        close_old_connections()


_authenticate_async = sync_to_async(_authenticate, thread_sensitive=False)

# Accepted keys are remembered per process for a few seconds (by hash): a database round trip on every request
# costed about 60% of a simple call's throughput. Any token save or delete in this process forgets them all at
# once; a revocation made in another process takes effect here within this many seconds.
AUTH_CACHE_SECONDS = 5.0
_AUTH_CACHE_MAX = 10_000
_accepted: dict[str, tuple[float, ClientIdentity]] = {}


@receiver([post_save, post_delete], sender=ClientToken, dispatch_uid="mcpserver.auth.forget_accepted_keys")
def _forget_accepted_keys(**kwargs) -> None:
    _accepted.clear()


async def authenticate_key(raw_key: str) -> ClientIdentity | None:
    """The caller behind ``raw_key``, or None; a recently accepted key is answered without the database."""
    digest = key_hash(raw_key)
    now = time.monotonic()
    hit = _accepted.get(digest)
    if hit is not None and hit[0] > now:
        return hit[1]
    identity = await _authenticate_async(raw_key)
    if identity is not None:
        if len(_accepted) >= _AUTH_CACHE_MAX:
            _accepted.clear()
        _accepted[digest] = (now + AUTH_CACHE_SECONDS, identity)
    else:
        _accepted.pop(digest, None)
    return identity


async def _json_response(send: Send, status: int, body: dict, headers: list[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class McpHttpGuard:
    """ASGI middleware: Host/Origin → declared size → bearer token → buffered body within the limit → the app."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        auth_required: bool,
        max_body_bytes: int,
        security: TransportSecuritySettings,
    ) -> None:
        self.app = app
        self.auth_required = auth_required
        self.max_body_bytes = max_body_bytes
        self.security = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Host/Origin first, so a rebinding page learns nothing else (not even whether auth is on).
        refused = await self.security.validate_request(Request(scope), is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _json_response(send, 413, {"error": TOO_LARGE_MESSAGE})
            return

        if self.auth_required:
            identity = await self._identity(headers)
            if identity is None:
                await _json_response(
                    send, 401, {"error": UNAUTHORIZED_MESSAGE}, [(b"www-authenticate", b'Bearer realm="errcatalog"')]
                )
                return
            user = AuthenticatedUser(AccessToken(token=identity.key, client_id=identity.key, scopes=[]))
            scope = {**scope, "user": user, CLIENT_SCOPE_KEY: identity}
        else:
            client = scope.get("client") or ("unknown", 0)
            scope = {**scope, CLIENT_SCOPE_KEY: ClientIdentity(key=f"ip:{client[0]}", name="anonymous")}

        body = await self._read_body(receive)
        if body is None:
            await _json_response(send, 413, {"error": TOO_LARGE_MESSAGE})
            return
        await self.app(scope, body, send)

    async def _identity(self, headers: Headers) -> ClientIdentity | None:
        scheme, _, raw_key = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not raw_key.strip():
            return None
        return await authenticate_key(raw_key.strip())

    async def _read_body(self, receive: Receive) -> Receive | None:
        """Read the whole body within the limit and return a ``receive`` that replays it, or None if too large."""
        chunks: list[bytes] = []
        size = 0
        trailing: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                trailing = message
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        pending: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
        if trailing is not None:
            pending.append(trailing)

        async def replay() -> Message:
            if pending:
                return pending.pop(0)
            return await receive()

        return replay

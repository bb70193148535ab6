"""The HTTP guard in front of the MCP app: Host/Origin checks, a body size limit and bearer-token auth.

Django's middleware does not run on ``/mcp`` (the ASGI router sends it straight to the SDK), so this is where
requests are refused. Every refusal is a small JSON body with a clear HTTP status, never a traceback:
421/403 for a foreign Host/Origin (DNS-rebinding protection, the SDK's own check), 413 for an oversize body,
401 for a missing or wrong token, 503 when the database that holds the tokens (or, in external mode, the identity
provider) cannot be reached (a token this process accepted shortly before is still accepted then), 404 for a server
path that serves nothing to this caller.
The 401 says the same thing whether the token was missing, malformed, unknown or revoked, so it tells a prober
nothing; the 404 says the same thing whether the path names no server, a disabled upstream or named server or a
server the token may not use, and comes only after the token was accepted, so it tells a prober nothing either.

Two kinds of token are accepted: static client keys (``ec_…``) and OAuth access tokens of errcatalog's own
authorization server (``errcatalog.access.oauth``) or, in external mode, of the company's identity provider
(``errcatalog.access.external``). For OAuth clients this is a protected resource per the MCP authorization
specification: the 401 names the resource metadata and the scopes to ask for, a token is accepted only at the resource
it was issued for (RFC 8707), and a call that needs a scope the token lacks gets 403 ``insufficient_scope`` naming
every scope the client should ask for. Tokens are read from the Authorization header only, never from a query string,
and never go further than this guard (the gateway never sends them upstream).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from errcatalog.access import scopes as scope_names
from errcatalog.access.bearer import access_token_authenticate
from errcatalog.access.external import IDENTITY_PROVIDER, IdentityProviderUnavailable
from errcatalog.access.oauth import MCP_PATH, audience_allows, resource_metadata_url
from errcatalog.access.tokens import KEY_PREFIX, client_token_authenticate, key_hash
from errcatalog.caching import BoundedCache, process_cache, register_cache
from errcatalog.dependencies import DATABASE, DATABASE_ERRORS, Dependency
from errcatalog.input_limits import json_loads_bounded
from errcatalog.vocabulary import ROOT_SERVER
from mcpserver.jsonrpc_errors import screened_send

logger = logging.getLogger("mcpserver.auth")
UNAUTHORIZED_MESSAGE = (
    "A valid bearer token is required. Create one in admin (Client tokens) or with ./dev manage token_create."
)
TOO_LARGE_MESSAGE = "The request body is larger than this endpoint accepts."
DATABASE_UNAVAILABLE_MESSAGE = "The token store is unavailable right now, so the token cannot be checked; try again."
# Retry-After of that 503: the database is probed again every second; a few seconds spares it a stampede.
RETRY_AFTER_SECONDS = b"5"
NO_SERVER_MESSAGE = "There is no MCP server at this path."
INSUFFICIENT_SCOPE_MESSAGE = "This token may not call tools: authorize the client again with the scopes named."
# Where the pipeline finds the caller, next to the SDK's own "user" (which binds a 2025 session to its token).
CLIENT_SCOPE_KEY = "errcatalog.client"
# Where the handlers find the server the request's path names (``mcpserver.server.McpApp`` puts it there):
# ``ROOT_SERVER`` for /mcp, an upstream's name for /mcp/<name>, None for a path that names no server at all.
SERVER_SCOPE_KEY = "errcatalog.server"


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """Who is calling, as far as the pipeline needs to know: never the key itself."""

    key: str  # stable and unique: "token:<id>", or "ip:<address>" when auth is off
    name: str
    tool_scope: tuple[str, ...] = ()
    # May read the catalog's MCP resources and prompts (mcpserver.reference).
    can_read_catalog: bool = True
    # The servers (``ROOT_SERVER``, an upstream's or a named server's name) this caller may use; empty allows every one.
    servers: tuple[str, ...] = ()
    can_call_tools: bool = True
    # An OAuth token's: the scopes it holds (None for a static key, which cannot ask for more), the resource URLs it
    # was issued for (empty: all of this service) and when it expires (epoch seconds).
    scopes: frozenset[str] | None = None
    audiences: tuple[str, ...] = ()
    expires_at: float | None = None
    # The person the caller acts as (None with auth off): whose own connection an upstream protected by OAuth will be
    # called with, never with the caller's token.
    user_id: int | None = None

    def allows_tool(self, tool_name: str) -> bool:
        return self.can_call_tools and (not self.tool_scope or tool_name in self.tool_scope)

    def allows_server(self, server: str) -> bool:
        return not self.servers or server in self.servers


def request_client(request: object) -> ClientIdentity | None:
    """The caller of the HTTP request an SDK handler's context carries (None with auth off, or outside HTTP)."""
    scope = getattr(request, "scope", None)
    return scope.get(CLIENT_SCOPE_KEY) if isinstance(scope, dict) else None  # an ASGI scope is a dict


def request_session_id(request: object) -> str | None:
    """The ``Mcp-Session-Id`` of the HTTP request behind an SDK handler's context (None without one, or outside
    HTTP); a 2026-07-28 request belongs to no session, whatever it sends."""
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return None
    session_id = version = None
    for name, value in scope.get("headers", ()):
        if name == b"mcp-session-id" and session_id is None:
            session_id = value.decode("latin-1")
        elif name == b"mcp-protocol-version" and version is None:
            version = value.decode("latin-1")
    return None if version in MODERN_PROTOCOL_VERSIONS else session_id


def request_server(request: object) -> str:
    """The server the HTTP request behind an SDK handler's context was sent to (``ROOT_SERVER`` outside HTTP)."""
    scope = getattr(request, "scope", None)
    server = scope.get(SERVER_SCOPE_KEY, ROOT_SERVER) if isinstance(scope, dict) else ROOT_SERVER
    return server if isinstance(server, str) else ROOT_SERVER  # None never gets past the guard


def _authenticate(raw_key: str) -> ClientIdentity | None:
    close_old_connections()
    try:
        if raw_key.startswith(KEY_PREFIX):
            token = client_token_authenticate(raw_key)
            if token is None:
                return None
            return ClientIdentity(
                key=f"token:{token.pk}",
                name=token.name,
                tool_scope=tuple(token.tool_scope),
                can_read_catalog=token.can_read_catalog,
                servers=tuple(token.servers),
                can_call_tools=token.can_call_tools,
                user_id=token.user_id,
            )
        if settings.OAUTH["MODE"] == "off":
            return None
        access = access_token_authenticate(raw_key)
        if access is None:
            return None
        grant, rights = access.grant, access.rights
        # Rate limits, session caps and outcomes are per grant, as they are per static key.
        return ClientIdentity(
            key=f"token:{grant.pk}",
            name=grant.name,
            tool_scope=tuple(grant.tool_scope),
            can_read_catalog=rights.read_catalog,
            servers=tuple(grant.servers),
            can_call_tools=rights.call_tools,
            scopes=access.scopes,
            audiences=access.resources,
            expires_at=access.expires.timestamp(),
            user_id=grant.user_id,
        )
    finally:
        close_old_connections()


_authenticate_async = sync_to_async(_authenticate, thread_sensitive=False)

# Accepted keys are remembered per process for a few seconds (by hash): a database round trip on every request
# costed about 60% of a simple call's throughput. Any token save or delete in this process forgets them all at
# once (the "tokens" scope of errcatalog.caching); a revocation made in another process takes effect here within
# this many seconds.
AUTH_CACHE_SECONDS = 5.0
# A key in use is checked again in the background once its entry is this old, so that its entry is renewed before
# it expires: no request waits for the database then, nor do all the requests in flight when it would expire.
AUTH_RECHECK_SECONDS = 4.0
_AUTH_CACHE_MAX = 10_000
Accepted = tuple[ClientIdentity, AuthenticatedUser]
_accepted: BoundedCache[str, Accepted] = process_cache(
    "mcpserver.auth.accepted_keys", scope="tokens", max_entries=_AUTH_CACHE_MAX, max_age=AUTH_CACHE_SECONDS
)


class _Checks:
    """The database checks of keys in flight, by key hash: one per key at a time, however many requests wait.

    ``generation`` moves on whenever the "tokens" scope is cleared (a token saved or deleted in this process): a
    check that began before keeps nothing, as it may have read a token before its revocation.
    """

    def __init__(self) -> None:
        self.in_flight: dict[str, asyncio.Future[Accepted | None]] = {}
        self.generation = 0

    def forget(self) -> None:
        self.generation += 1
        self.in_flight.clear()


_checks = _Checks()
register_cache("mcpserver.auth.checks_in_flight", _checks.forget, scope="tokens")


class TokenStoreUnavailable(RuntimeError):
    """What a key is checked against cannot be reached (the database that holds the tokens or, in external mode, the
    identity provider), and this key was not accepted recently."""


async def _accepted_key(raw_key: str) -> Accepted | None:
    """The caller behind ``raw_key`` and the SDK user bound to it, both built once per accepted key and period.

    Raises ``TokenStoreUnavailable`` when the database (or the identity provider) is unreachable and the key was not
    accepted recently.
    """
    digest = key_hash(raw_key)
    kept = _accepted.get_with_age(digest)  # read before the database is tried, so its age is the call's
    if kept is not None and _expired(kept[0][0]):
        return None
    if kept is not None and kept[1] < AUTH_CACHE_SECONDS:
        if kept[1] >= AUTH_RECHECK_SECONDS and DATABASE.available():
            _checking(digest, raw_key)
        return kept[0]
    if not DATABASE.available():  # known to be down: no connect attempt until the next probe
        return _accepted_during_outage(kept)
    try:
        # Shielded: a request that goes away does not cancel the check the others wait for.
        return await asyncio.shield(_checking(digest, raw_key))
    except DATABASE_ERRORS:
        return _accepted_during_outage(kept)
    except IdentityProviderUnavailable:
        return _accepted_during_outage(kept, dependency=IDENTITY_PROVIDER)


def _checking(digest: str, raw_key: str) -> asyncio.Future[Accepted | None]:
    """The database check of ``raw_key`` in flight, started if there is none (on this event loop)."""
    check = _checks.in_flight.get(digest)
    if check is None or check.done() or check.get_loop() is not asyncio.get_running_loop():
        check = _checks.in_flight[digest] = asyncio.ensure_future(_check(digest, raw_key, _checks.generation))
        check.add_done_callback(functools.partial(_check_done, digest))
    return check


async def _check(digest: str, raw_key: str, generation: int) -> Accepted | None:
    try:
        identity = await _authenticate_async(raw_key)
    except DATABASE_ERRORS as exc:
        DATABASE.failed(exc)
        raise
    DATABASE.succeeded()
    if identity is None:
        _accepted.pop(digest)
        return None
    accepted = identity, AuthenticatedUser(AccessToken(token=identity.key, client_id=identity.key, scopes=[]))
    if generation == _checks.generation:
        _accepted.set(digest, accepted)
    return accepted


def _expired(identity: ClientIdentity) -> bool:
    return identity.expires_at is not None and identity.expires_at <= time.time()


def _check_done(digest: str, check: asyncio.Future[Accepted | None]) -> None:
    if _checks.in_flight.get(digest) is check:
        del _checks.in_flight[digest]
    if check.cancelled():
        return
    # Retrieved here, so that asyncio does not report a background check's failure as never retrieved: a database
    # or identity provider outage is DATABASE's or IDENTITY_PROVIDER's news (logged there); anything else is a bug,
    # logged once here.
    exc = check.exception()
    if exc is not None and not isinstance(exc, (*DATABASE_ERRORS, IdentityProviderUnavailable)):
        logger.error("Checking a client token failed", exc_info=exc)


def _accepted_during_outage(stale: tuple[Accepted, float] | None, dependency: Dependency = DATABASE) -> Accepted:
    # A token this process accepted shortly before the outage keeps working: the MCP path needs no database
    # once the catalog snapshot is loaded. Its entry stays in ``_accepted`` after it expired (until the cache is
    # cleared), which is what makes this possible.
    grace = settings.MCP["AUTH_OUTAGE_GRACE_SECONDS"]
    if stale is not None and stale[1] <= grace:
        dependency.degraded("MCP tokens accepted before the outage are accepted from memory; new ones get 503")
        return stale[0]
    raise TokenStoreUnavailable


async def _json_response(send: Send, status: int, body: dict, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
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


def _allowed(value: str, allowed: tuple[str, ...]) -> bool:
    """``value`` is a listed Host/Origin, or a listed ``base:*`` pattern's base with a numeric port.

    Whole host names only: ``127.0.0.1:*`` allows ``127.0.0.1:8000`` but not ``127.0.0.1:8000.evil.example.com``
    or ``127.0.0.1:80@evil.example.com``, which the SDK's prefix rule lets through. Host names and schemes are
    case-insensitive, so the comparison is too: ``allowed`` is lower-case already (``McpHttpGuard``).
    """
    value = value.lower()
    for pattern in allowed:
        if value == pattern:
            return True
        if pattern.endswith(":*"):
            base, _, port = value.rpartition(":")
            if base == pattern[:-2] and 0 < len(port) <= 5 and port.isascii() and port.isdigit():
                return True
    return False


# Host/Origin verdicts a guard remembers (``McpHttpGuard._refusal``).
HOST_VERDICTS_KEPT = 256


class McpHttpGuard:
    """ASGI middleware: Host/Origin → declared size → bearer token → the server → buffered body within the limit →
    the app.

    This is the only Host/Origin check of the endpoint: the session managers behind it get DNS-rebinding
    protection switched off (``mcpserver.server.McpApp``), so each request is checked once. The settings are
    the SDK's ``TransportSecuritySettings`` and refusals are the SDK's (421/403 with its text), but hosts match
    as whole names (``_allowed``), not as the SDK's prefixes.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        auth_required: bool,
        max_body_bytes: int,
        security: TransportSecuritySettings,
        serves: Callable[[str], bool] = lambda server: server == ROOT_SERVER,
    ) -> None:
        self.app = app
        # Whether a server name (never ``ROOT_SERVER``, always served) is served now: an enabled upstream's or named
        # server's.
        self.serves = serves
        self.auth_required = auth_required
        self.max_body_bytes = max_body_bytes
        self._check_hosts = security.enable_dns_rebinding_protection
        self._allowed_hosts = tuple(host.lower() for host in security.allowed_hosts)
        self._allowed_origins = tuple(origin.lower() for origin in security.allowed_origins)
        # Verdicts by (Host, Origin): a client sends the same pair on every request. Bounded, since the values are
        # the client's: started over when full.
        self._verdicts: dict[tuple[bytes | None, bytes | None], tuple[int, str] | None] = {}

    def _refusal(self, host: bytes | None, origin: bytes | None) -> tuple[int, str] | None:
        """The SDK's status and text for a foreign Host (421) or Origin (403), or None when both are allowed."""
        if not self._check_hosts:
            return None
        key = (host, origin)
        try:
            return self._verdicts[key]
        except KeyError:
            pass
        if len(self._verdicts) >= HOST_VERDICTS_KEPT:
            self._verdicts.clear()
        verdict = self._verdicts[key] = self._verdict(host, origin)
        return verdict

    def _verdict(self, host: bytes | None, origin: bytes | None) -> tuple[int, str] | None:
        if not host or not _allowed(host.decode("latin-1"), self._allowed_hosts):
            return 421, "Invalid Host header"
        # Origin can be absent (same-origin requests, non-browser clients).
        if origin and not _allowed(origin.decode("latin-1"), self._allowed_origins):
            return 403, "Invalid Origin header"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # One pass over the raw headers (ASGI names are lower-case); the first value of each wins, as with
        # starlette's Headers.get.
        host = origin = declared = authorization = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value if host is None else host
            elif name == b"origin":
                origin = value if origin is None else origin
            elif name == b"content-length":
                declared = value if declared is None else declared
            elif name == b"authorization":
                authorization = value if authorization is None else authorization
        # Host/Origin first, so a rebinding page learns nothing else (not even whether auth is on).
        refusal = self._refusal(host, origin)
        if refusal is not None:
            status, text = refusal
            await Response(text, status_code=status)(scope, receive, send)
            return
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _json_response(send, 413, {"error": TOO_LARGE_MESSAGE})
            return

        # The scope is this request's own (the server builds one per request), so the caller is added in place.
        if self.auth_required:
            try:
                accepted = await self._identity(authorization)
            except TokenStoreUnavailable:
                await _json_response(
                    send, 503, {"error": DATABASE_UNAVAILABLE_MESSAGE}, [(b"retry-after", RETRY_AFTER_SECONDS)]
                )
                return
            # A static key has no audience: the resource URL is built only for a token bound to one.
            audiences = accepted[0].audiences if accepted is not None else ()
            if accepted is None or (audiences and not audience_allows(audiences, self._resource_url(scope, host))):
                if authorization is not None:
                    # One line per refused token (a request without one is a client discovering the metadata).
                    logger.info(
                        "MCP request refused: %s",
                        "the token was issued for another resource"
                        if accepted is not None
                        else "the bearer token is unknown, expired or revoked",
                    )
                await _json_response(
                    send, 401, {"error": UNAUTHORIZED_MESSAGE}, [(b"www-authenticate", self._challenge(scope, host))]
                )
                return
            scope[CLIENT_SCOPE_KEY], scope["user"] = accepted
            identity = accepted[0]
        else:
            client = scope.get("client") or ("unknown", 0)
            identity = scope[CLIENT_SCOPE_KEY] = ClientIdentity(key=f"ip:{client[0]}", name="anonymous")

        # After the token, so that whether a server exists is never told to a caller without one; and a server the
        # token may not use is answered exactly as one that does not exist.
        server = scope.get(SERVER_SCOPE_KEY, ROOT_SERVER)
        if server is None or (server != ROOT_SERVER and not self.serves(server)) or not identity.allows_server(server):
            await _json_response(send, 404, {"error": NO_SERVER_MESSAGE})
            return

        read = await self._read_body(receive)
        if read is None:
            await _json_response(send, 413, {"error": TOO_LARGE_MESSAGE})
            return
        body, replay = read
        if identity.scopes is not None and not identity.can_call_tools and _calls_a_tool(body):
            # Step-up (MCP authorization): one challenge naming every scope the client should hold from now on.
            wanted = scope_names.scope_string({*identity.scopes, scope_names.TOOLS})
            challenge = self._challenge(scope, host, error="insufficient_scope", scope=wanted)
            await _json_response(send, 403, {"error": INSUFFICIENT_SCOPE_MESSAGE}, [(b"www-authenticate", challenge)])
            return
        # The SDK's JSON-RPC errors can quote the request; only catalog text and fixed strings go out.
        await self.app(scope, replay, screened_send(send))

    def _public_base(self, scope: Scope, host: bytes | None) -> str:
        """Where clients reach this service: ``OAUTH["PUBLIC_URL"]``, else this request's scheme and Host (checked
        above, or by the proxy in front when ``BEHIND_TLS_PROXY`` says that X-Forwarded-Proto is its own)."""
        public = settings.OAUTH["PUBLIC_URL"]
        if public:
            return public
        scheme = scope.get("scheme", "http")
        if settings.SECURE_PROXY_SSL_HEADER is not None:
            for name, value in scope["headers"]:
                if name == b"x-forwarded-proto":
                    scheme = "https" if value == b"https" else scheme
                    break
        return f"{scheme}://{(host or b'').decode('latin-1')}"

    def _resource_url(self, scope: Scope, host: bytes | None) -> str:
        return self._public_base(scope, host) + _resource_path(scope)

    def _challenge(self, asgi_scope: Scope, host: bytes | None, **params: str) -> bytes:
        """The WWW-Authenticate value of a refusal: with OAuth on, where the resource metadata is (RFC 9728) and
        the scopes to ask for. Each value is quoted (RFC 9110's quoted-string): the Host is the client's."""
        if settings.OAUTH["MODE"] == "off":
            return b'Bearer realm="errcatalog"'
        base = self._public_base(asgi_scope, host)
        params = {
            "realm": "errcatalog",
            **params,
            "resource_metadata": resource_metadata_url(base, _resource_path(asgi_scope)),
        }
        params.setdefault("scope", scope_names.scope_string(scope_names.MCP))
        quoted = (f'{key}="{_quoted(value)}"' for key, value in params.items())
        return ("Bearer " + ", ".join(quoted)).encode("latin-1", "replace")

    async def _identity(self, authorization: bytes | None) -> Accepted | None:
        scheme, _, raw_key = (authorization or b"").decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not raw_key.strip():
            return None
        return await _accepted_key(raw_key.strip())

    async def _read_body(self, receive: Receive) -> tuple[bytes, Receive] | None:
        """Read the whole body within the limit and return it with a ``receive`` that replays it, or None if too
        large."""
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
        body = b"".join(chunks)
        pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
        if trailing is not None:
            pending.append(trailing)

        async def replay() -> Message:
            if pending:
                return pending.pop(0)
            return await receive()

        return body, replay


def _resource_path(scope: Scope) -> str:
    """The path of the resource a request was sent to, from the server the router found in it (never the raw path,
    which the client wrote): /mcp for ``/mcp`` and for a path that names no server (answered 404 after the token)."""
    server = scope.get(SERVER_SCOPE_KEY)
    return MCP_PATH if not server or server == ROOT_SERVER else f"{MCP_PATH}/{server}"


def _quoted(value: str) -> str:
    return "".join(char for char in value if char >= " " and char != "\x7f").replace("\\", "\\\\").replace('"', '\\"')


def _calls_a_tool(body: bytes) -> bool:
    """Whether a JSON-RPC body (one message or a batch) calls a tool. The cheap test first: most bodies do not."""
    if b"tools/call" not in body:
        return False
    try:
        message = json_loads_bounded(body, settings.ERRCATALOG["API_MAX_JSON_DEPTH"])
    except ValueError:
        # Not JSON, or nested deeper than any request of ours: the SDK answers a parse error, or the call is refused
        # later as any call of a tool the token may not use.
        return False
    messages = message if isinstance(message, list) else [message]
    return any(isinstance(item, dict) and item.get("method") == "tools/call" for item in messages)

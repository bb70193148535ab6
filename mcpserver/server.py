"""The one place the MCP SDK is wired: the low-level ``Server``, its two session managers and the ASGI app.

Two session managers share one ``Server``: requests that name a 2026-07-28
(or any non-handshake) ``MCP-Protocol-Version`` go to a JSON-response manager, where a stateless call costs
least; everything else (2025-11-25: ``initialize``, ``Mcp-Session-Id``, server-to-client requests over SSE)
goes to the stateful SSE manager, which is what elicitation, progress and logging need. The SDK's manager
makes the same split itself in a private method, so routing by the same header and the same rule
(``mcpserver.sdk_internals.routing``, with its contract test) never sends a request where it would not have gone
anyway.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any, get_args

import mcp_types as types
import sentry_sdk
from django.conf import settings
from django.db import DatabaseError
from mcp.server import NotificationOptions, Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INTERNAL_ERROR
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import Receive, Scope, Send

from errcatalog.catalog.snapshot import acatalog_snapshot
from errcatalog.render.entries import CatalogSnapshot
from errcatalog.safety import safe_identifier
from errcatalog.vocabulary import ROOT_SERVER
from mcpserver.auth import SERVER_SCOPE_KEY, ClientIdentity, McpHttpGuard, request_client, request_server
from mcpserver.calls import ToolCall
from mcpserver.changes import ChangeFeed
from mcpserver.extensions import autodiscover_extensions
from mcpserver.gateway import gateway, server_tools
from mcpserver.gateway.parking import ParkNaming, park_naming
from mcpserver.locale import requested_locales
from mcpserver.long_calls import WatchedCall, naming_parked_call, replayed, request_body
from mcpserver.offerings import UpstreamOfferings
from mcpserver.pipeline import call_tool
from mcpserver.reference import HANDLED, CatalogReader
from mcpserver.registry import ClientCannotAnswer, ToolSpec, UserAnswer, autodiscover, registry
from mcpserver.sdk_internals import fast_paths, wire
from mcpserver.sdk_internals.otel import spans_only_when
from mcpserver.sdk_internals.routing import is_modern
from mcpserver.sdk_internals.streams import PerSessionEventStores
from mcpserver.sdk_internals.tool_calls import ModernToolCalls
from mcpserver.sessions import SessionAdmission
from mcpserver.streams import ReplayStore
from mcpserver.tool_rounds import ToolRounds
from mcpserver.tracing import tracing_on
from mcpserver.virtual_servers import server_of_path, view_handlers

logger = logging.getLogger("mcpserver.server")
SERVER_NAME = "errcatalog"
SERVER_VERSION = "1"
# The ``serverInfo`` a 2026-07-28 result carries in ``_meta``, as the SDK would stamp it (``Server.server_info_stamp``);
# ``ModernToolCalls`` stamps it (``mcpserver.sdk_internals``).
SERVER_INFO = types.Implementation(name=SERVER_NAME, version=SERVER_VERSION).model_dump(
    by_alias=True, mode="json", exclude_none=True
)
INSTRUCTIONS = (
    "errcatalog's tools. Failed calls return structured errors (toolError:v1 / needsInput:v1) that say what "
    "happened, why and what to do next; a needsInput result carries a question to put to the user."
)
# The results that carry a server's instructions: 2025-11-25's handshake and 2026-07-28's discovery.
_INSTRUCTED_METHODS = frozenset({"initialize", "server/discover"})
# ToolContext.log is logging on 2025-11-25 sessions (and opted-in 2026 requests); the SDK marks the feature
# deprecated for 2026-07-28 and would warn on every call.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=__name__)
_PROTOCOL_HEADER = b"mcp-protocol-version"
# A 2026-07-28 request names its method and, for tools/call, its tool in headers (the SDK checks them against the
# body): enough to route a call without reading its body.
_METHOD_HEADER = b"mcp-method"
_NAME_HEADER = b"mcp-name"
LOG_LEVELS = frozenset(get_args(types.LoggingLevel))
# The server a 2026-07-28 request was sent to, for ``tool_input_schema``, which the SDK calls with a tool's name only:
# set by ``McpApp._route`` around the modern manager, which calls it in the request's own task (handlers read the
# scope instead, ``request_server``).
_modern_server: ContextVar[str] = ContextVar("errcatalog_modern_server", default=ROOT_SERVER)


def _enabled_tools(server: str = ROOT_SERVER) -> Mapping[str, ToolSpec]:
    return server_tools(registry.enabled_by_name(settings.MCP["TOOLSETS"]), server)


def _client(ctx: ServerRequestContext[Any, Any]) -> ClientIdentity | None:
    return request_client(ctx.request)


def _tool(spec: ToolSpec, name: str) -> types.Tool:
    annotations = types.ToolAnnotations.model_validate(spec.annotations, by_name=False) if spec.annotations else None
    return types.Tool(
        name=name,
        title=spec.title,
        description=spec.description,
        input_schema=dict(spec.listed_input_schema),
        output_schema=dict(spec.output_schema) if spec.output_schema else None,
        annotations=annotations,
        execution=types.ToolExecution.model_validate(spec.execution, by_name=False) if spec.execution else None,
    )


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    """The enabled tools of the request's server this caller's token may use, by the names that server serves."""
    client = _client(ctx)
    tools = _enabled_tools(request_server(ctx.request))
    return types.ListToolsResult(
        tools=[
            _tool(spec, name)
            for name, spec in tools.items()
            if client is None or client.allows_tool(spec.name)  # a scope names the tool as /mcp serves it
        ]
    )


def _streams(name: str, server: str) -> bool:
    """Whether a call of the tool ``name`` may send notifications or run long: an upstream's tool (its progress,
    its run time) or one of ours that takes a context (progress, logging, sampling). Such a call is served by the
    streaming manager, which also cancels it when the client goes away."""
    spec = _enabled_tools(server).get(name)
    return spec is not None and bool(spec.upstream or spec.wants_context)


def tool_input_schema(name: str) -> Mapping[str, Any] | None:
    """For the SDK's 2026-07-28 header validation, so it does not re-run tools/list on every call."""
    spec = _enabled_tools(_modern_server.get()).get(name)
    return spec.listed_input_schema if spec is not None else None


class _ToolContext:
    """What a running tool may ask of its call (``mcpserver.registry.ToolContext``).

    A tool's own requests (``sample``, ``elicit``) go to the client mid-call on a 2025-11-25 session's stream, and as
    input round trips on 2026-07-28 (``mcpserver.tool_rounds``: the call answers with an ``InputRequiredResult``, and
    the tool runs again with the answer when the client calls again)."""

    __slots__ = ("_back_channel", "_ctx", "_rounds", "call", "client", "session_id")

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        client: ClientIdentity | None,
        session_id: str | None,
        *,
        back_channel: bool,
    ):
        self._ctx = ctx
        self._back_channel = back_channel
        self._rounds: ToolRounds | None = None
        self.call: ToolCall | None = None  # the call it serves, once built (its round trip's state and answers)
        self.client = client.name if client else None
        self.session_id = session_id

    def _round_trip(self) -> ToolRounds | None:
        """The call's input round trips when its client speaks 2026-07-28; None on a 2025-11-25 session."""
        call = self.call
        if call is None or not call.modern:
            return None
        if self._rounds is None:
            # Read at the tool's first request: by then the pipeline has taken its own elicitation's part of the
            # state (``mcpserver.elicitation.carried_arguments``).
            self._rounds = ToolRounds.of(call.request_state, call.input_responses)
        return self._rounds

    async def log(self, level: str, data: Any, *, logger: str | None = None, related: bool = True) -> None:
        """A log message on the call's request (``related``), or on its 2025-11-25 session's own stream, which
        outlives the call."""
        request_id = self._ctx.request_id if related else None
        await self._ctx.session.send_log_message(level, data, logger, related_request_id=request_id)  # type: ignore[arg-type]

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    async def sample(self, prompt: str, *, max_tokens: int) -> str:
        session = self._ctx.session
        capabilities = session.client_capabilities
        rounds = self._round_trip()
        if not (
            (self._back_channel or rounds is not None)
            and capabilities is not None
            and capabilities.sampling is not None
        ):
            raise ClientCannotAnswer("the client cannot answer sampling/createMessage on this call")
        messages = [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))]
        if rounds is not None:
            request = types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=messages, max_tokens=max_tokens)
            )
            result = rounds.answer(request, types.CreateMessageResult)
        else:
            result = await session.create_message(
                messages, max_tokens=max_tokens, related_request_id=self._ctx.request_id
            )
        return result.content.text if isinstance(result.content, types.TextContent) else ""

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> UserAnswer:
        session = self._ctx.session
        rounds = self._round_trip()
        if not ((self._back_channel or rounds is not None) and _can_elicit_form(session.client_capabilities)):
            raise ClientCannotAnswer("the client cannot answer elicitation/create on this call")
        if rounds is not None:
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=dict(schema))
            )
            result = rounds.answer(request, types.ElicitResult)
        else:
            result = await session.elicit_form(message, dict(schema), related_request_id=self._ctx.request_id)
        return UserAnswer(result.action, dict(result.content or {}))

    # What the gateway relays to the call's client (``mcpserver.gateway.elicitation.CallersClient``): on the call's
    # 2025-11-25 stream, when the client declared it.

    async def create_message(self, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        capabilities = self._back_channel_capabilities("sampling/createMessage")
        if capabilities.sampling is None:
            raise ClientCannotAnswer("the client did not declare sampling")
        return await self._request(types.CreateMessageRequest(params=params), types.CreateMessageResult)

    async def list_roots(self) -> types.ListRootsResult:
        capabilities = self._back_channel_capabilities("roots/list")
        if capabilities.roots is None:
            raise ClientCannotAnswer("the client did not declare roots")
        return await self._request(types.ListRootsRequest(), types.ListRootsResult)

    async def elicit_url(self, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        capabilities = self._back_channel_capabilities("elicitation/create")
        if capabilities.elicitation is None or capabilities.elicitation.url is None:
            raise ClientCannotAnswer("the client did not declare URL elicitation")
        return await self._request(types.ElicitRequest(params=params), types.ElicitResult)

    def session_stream(self) -> tuple[str, ServerSession] | None:
        # What the SDK's session sends outside any request goes on the session's own stream, which outlives the call.
        if not self._back_channel or self.session_id is None:
            return None
        return self.session_id, self._ctx.session

    def _back_channel_capabilities(self, method: str) -> types.ClientCapabilities:
        capabilities = self._ctx.session.client_capabilities
        if not self._back_channel or capabilities is None:
            raise ClientCannotAnswer(f"the client cannot answer {method} on this call")
        return capabilities

    async def _request[R: types.Result](self, request: types.ServerRequest, result_type: type[R]) -> R:
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        return await self._ctx.session.send_request(request, result_type, metadata=metadata)

    @property
    def capabilities(self) -> types.ClientCapabilities | None:
        """What the client declared (per connection on 2025-11-25, per request on 2026-07-28)."""
        return self._ctx.session.client_capabilities

    async def close_stream(self) -> None:
        # The SDK offers the callback only when an event store can replay what the client misses meanwhile
        # (``mcpserver.streams``; a 2025-11-25 session's call).
        if self._ctx.close_sse_stream is not None:
            await self._ctx.close_sse_stream()


def _can_elicit_form(capabilities: types.ClientCapabilities | None) -> bool:
    elicitation = capabilities.elicitation if capabilities else None
    # An empty elicitation capability means form mode (the spec's backwards-compatible reading).
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


async def handle_call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
    """``tools/call`` on a 2025-11-25 session (``ModernToolCalls`` serves 2026-07-28 calls): the SDK's runner puts
    the result on the wire, a repeated failure's in the form it was given the first time."""
    result = await _answer(ctx, params)
    form = wire.remembered_form(result, ctx.protocol_version, server_info=SERVER_INFO)
    return result if form is None else form


async def _answer(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    session = ctx.session
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    session_id, accept_language = _call_headers(ctx.request)
    if modern:
        session_id = None  # a 2026-07-28 request belongs to no session, whatever it sends
    client = _client(ctx)
    back_channel = not modern and session.can_send_request
    context = _ToolContext(ctx, client, session_id, back_channel=back_channel)
    call = ToolCall(
        name=params.name,
        arguments=dict(params.arguments or {}),
        client=client,
        session_id=session_id,
        protocol_version=ctx.protocol_version,
        can_elicit=_can_elicit_form(session.client_capabilities),
        elicit_form=_elicitation_on(ctx) if back_channel else None,
        modern=modern,
        input_responses=params.input_responses,
        request_state=params.request_state,
        context=context,
        wants_progress=_progress_requested(params),
        log_level=_log_level_requested(params) if modern else None,
        locales=requested_locales(accept_language),
        server=request_server(ctx.request),
    )
    context.call = call
    try:
        return await call_tool(call)
    except MCPError:
        raise
    except Exception as exc:
        # A bug in the pipeline itself. The 2025 path of the low-level server would put the exception's text on
        # the wire (code 0), so it becomes a plain internal error here and the details go to logs and Sentry.
        logger.exception("The pipeline failed on a call of %s", safe_identifier(params.name))
        sentry_sdk.capture_exception(exc, fingerprint=["errcatalog", "pipeline"])
        raise MCPError(INTERNAL_ERROR, "Internal error") from None
    finally:
        # The context and its call refer to each other: unlinked once the call is answered, the request's objects
        # are freed at once rather than left as a reference cycle for the garbage collector.
        context.call = None


def _log_level_requested(params: types.CallToolRequestParams) -> str | None:
    """The level a 2026-07-28 request opted in to log messages at; None without (or with an unknown level)."""
    level = (params.meta or {}).get(types.LOG_LEVEL_META_KEY)
    return level if isinstance(level, str) and level in LOG_LEVELS else None


def _setting_log_level(
    extension: Callable[..., Awaitable[Any]] | None,
) -> Callable[[ServerRequestContext[Any, Any], types.SetLevelRequestParams], Awaitable[types.EmptyResult]]:
    """``logging/setLevel`` of a 2025-11-25 session: its level, kept for the log messages its upstreams send it and
    forwarded to its own upstream sessions (``mcpserver.gateway.log_relay``); then an extension's handler."""

    async def set_logging_level(
        ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        session_id, _ = _call_headers(ctx.request)
        if session_id is not None:
            await gateway.client_log_level(session_id, params.level)
        if extension is not None:
            await extension(ctx, params)
        return types.EmptyResult()

    return set_logging_level


def _progress_requested(params: types.CallToolRequestParams) -> bool:
    meta = params.meta or {}
    return meta.get("progress_token", meta.get("progressToken")) is not None


def _elicitation_on(
    ctx: ServerRequestContext[Any, Any],
) -> Callable[[str, dict[str, Any]], Awaitable[types.ElicitResult]]:
    """``elicitation/create`` on the call's 2025-11-25 session, tied to its request."""

    async def elicit_form(message: str, schema: dict[str, Any]) -> types.ElicitResult:
        return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)

    return elicit_form


def _call_headers(request: object) -> tuple[str | None, str | None]:
    """``Mcp-Session-Id`` and ``Accept-Language`` of the HTTP request behind a call, in one pass over its raw
    headers (the first value of each wins, as with starlette's ``Headers.get``); (None, None) outside HTTP."""
    scope = getattr(request, "scope", None)
    session_id = accept_language = None
    for name, value in scope.get("headers", ()) if isinstance(scope, dict) else ():
        if name == b"mcp-session-id":
            session_id = value.decode("latin-1") if session_id is None else session_id
        elif name == b"accept-language":
            accept_language = value.decode("latin-1") if accept_language is None else accept_language
    return session_id, accept_language


def _request_state_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Bind 2026-07-28 request state to the client token that asked, so another token cannot replay it, and to the
    server it was asked at, so that no state crosses from one server's path to another's."""
    client = _client(ctx)
    if client is None:
        return None
    server = request_server(ctx.request)
    return client.key if server == ROOT_SERVER else f"{client.key} /mcp/{server}"


def named_server_instructions(description: str) -> str:
    """A named server's instructions: its description, for the model to know what the server is for, then ours."""
    return f"{description}\n\n{INSTRUCTIONS}" if description.strip() else INSTRUCTIONS


async def _named_server_instructions(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: at a named server, the instructions of ``initialize`` and ``server/discover`` results are
    its own (``named_server_instructions``); every other message passes untouched."""
    result = await call_next(ctx)
    if ctx.method in _INSTRUCTED_METHODS and isinstance(result, dict):
        named = gateway.named_servers.get(request_server(ctx.request))
        if named is not None:
            result = {**result, "instructions": named_server_instructions(named.description)}
    return result


class _Server(Server[Any]):
    """The SDK's server, promising 2025-11-25 sessions the list-changed notifications ``mcpserver.changes`` sends.

    (A 2026-07-28 client learns the same from the served ``subscriptions/listen``.) The session manager asks for
    the initialization options without any, so the promise is made here.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True
        )
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def build_server(feed: ChangeFeed) -> tuple[Server[Any], CatalogReader]:
    """The SDK server with our handlers and the extensions', and the catalog reader serving resources and prompts."""
    autodiscover()
    extension_handlers = {
        name: handler for extension in autodiscover_extensions() for name, handler in extension.handlers.items()
    }
    # Ours, in front of an extension's (which is still called, for its own tools' sake).
    extension_handlers["on_set_logging_level"] = _setting_log_level(extension_handlers.get("on_set_logging_level"))
    # /mcp's resources, prompts and completion: the catalog's, then the upstreams', then the extensions'.
    offerings = UpstreamOfferings(feed, extension_handlers)
    upstreams = offerings.at_root()
    reader = CatalogReader(feed, {name: upstreams[name] for name in HANDLED})
    # At an upstream's own path, its own (mcpserver.virtual_servers).
    handlers = view_handlers({**extension_handlers, **upstreams, **reader.handlers()}, offerings.at_upstream())
    # The SDK types each on_* handler keyword on its own; ours and the extensions' go over as one mapping.
    server = _Server(  # type: ignore[call-overload]
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=handle_call_tool,
        on_subscriptions_listen=offerings.listening(feed.listen),
        get_tool_input_schema=tool_input_schema,
        **handlers,
    )
    server.add_notification_handler("notifications/initialized", types.NotificationParams, feed.session_initialized)
    fast = fast_paths()  # without them, the SDK's plain path (``mcpserver.sdk_internals``)
    if fast:
        # The SDK's span per message (on by default) opens spans only when they are recorded, like ours.
        spans_only_when(server, tracing_on)
    security = RequestStateSecurity(
        keys=[settings.MCP["REQUEST_STATE_KEY"]], bind_principal=_request_state_principal, audience=SERVER_NAME
    )
    server.middleware.append(RequestStateBoundary(security, default_audience=SERVER_NAME))
    if fast:
        server.middleware.append(ModernToolCalls(_answer, server_info=SERVER_INFO))
    # Innermost, so that the 2026-07-28 calls ``ModernToolCalls`` answers never pass through it.
    server.middleware.append(_named_server_instructions)
    return server, reader


class McpApp:
    """The ASGI app behind ``/mcp``: the HTTP guard, then the session manager for the request's generation."""

    def __init__(self) -> None:
        mcp = settings.MCP
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(mcp["ALLOWED_HOSTS"]),
            allowed_origins=list(mcp["ALLOWED_ORIGINS"]),
        )
        self.feed = ChangeFeed()
        self.server, self.reader = build_server(self.feed)
        # The guard checks Host/Origin once for every request; the managers would repeat the same check (they
        # still check the content type of a POST).
        checked_by_guard = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        common = {"security_settings": checked_by_guard, "max_request_body_size": mcp["MAX_BODY_BYTES"]}
        self.modern = StreamableHTTPSessionManager(self.server, json_response=True, stateless=True, **common)
        # 2026-07-28 calls that may stream (``_streams``) and asked for notifications (``_long_call``): answered as
        # SSE once the handler sends a notification or runs past the SDK's deferral window, and cancelled when the
        # client closes the request. A quick call is still answered as JSON.
        self.streaming = StreamableHTTPSessionManager(self.server, json_response=False, stateless=True, **common)
        # 2025-11-25 streams are resumable: each session's events are kept a while, in this process, and replayed to
        # a client that reconnects with Last-Event-ID (``mcpserver.streams``).
        self.replay = (
            ReplayStore(mcp["STREAM_REPLAY_EVENTS"], mcp["STREAM_REPLAY_SECONDS"])
            if mcp["STREAM_REPLAY_EVENTS"]
            else None
        )
        # The SDK closes a 2025 session after this long without a request in flight; SessionAdmission applies the
        # same rule to its per-token account of open sessions.
        idle = mcp["SESSION_IDLE_SECONDS"]
        self.legacy = PerSessionEventStores(
            self.server,
            session_store=self.replay.session_view if self.replay is not None else None,
            session_idle_timeout=idle,
            retry_interval=mcp["STREAM_RETRY_MS"] if self.replay is not None else None,
            **common,
        )
        # A session that ends closes its own upstream sessions and forgets its log level (``mcpserver.gateway``).
        self.admission = SessionAdmission(
            self.legacy.handle_request, idle_seconds=idle, on_ended=gateway.client_session_ended
        )
        self.guard = McpHttpGuard(
            self._route,
            auth_required=mcp["AUTH"],
            max_body_bytes=mcp["MAX_BODY_BYTES"],
            security=security,
            serves=gateway.serves,  # an upstream's own path or a named server: while it is enabled here
        )

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Both managers' task groups, entered once per process by the outer app's lifespan."""
        # Entered first, so left last: upstream connections close (their child processes stop) once the managers
        # serve no more calls, and listen streams end gracefully before the managers stop.
        async with gateway.run(), self.modern.run(), self.streaming.run(), self.legacy.run(), self.feed.run():
            snapshot = await _load_catalog()
            if snapshot is not None:
                self.reader.prime(snapshot)
            tools = _tools_digest()

            async def tools_moved() -> None:
                nonlocal tools
                digest = _tools_digest()
                if digest != tools:
                    tools = digest
                    await self.feed.publish(ToolsListChanged())

            def tools_changed() -> None:
                self.feed.soon(tools_moved)

            stop_following = gateway.on_tools_changed(tools_changed)
            # One line for both managers (settings.LOGGING quiets the SDK's own, which came once per manager).
            logger.info("MCP endpoint ready: 2026-07-28 requests answered as JSON, 2025-11-25 sessions over SSE")
            # Everything loaded by now (Django, the SDK, the tools) lives as long as the process. Frozen, it is
            # left out of the cyclic garbage collector's full passes, which otherwise walk the whole heap again
            # and again and cost a busy endpoint much of its time per call.
            gc.freeze()
            try:
                yield
            finally:
                stop_following()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # /mcp or an upstream's own /mcp/<name> (mcpserver.virtual_servers); None names nothing, answered by the guard.
        scope[SERVER_SCOPE_KEY] = server_of_path(scope["path"])
        await self.guard(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = method = name = None
        for key, value in scope["headers"]:
            if key == _PROTOCOL_HEADER:
                version = value
            elif key == _METHOD_HEADER:
                method = value
            elif key == _NAME_HEADER:
                name = value
        if not is_modern(version):
            await self.admission(scope, receive, send)
            return
        server = scope.get(SERVER_SCOPE_KEY) or ROOT_SERVER
        token = _modern_server.set(server)
        try:
            if method == b"tools/call" and name is not None and _streams(name.decode("latin-1"), server):
                await self._long_call(scope, receive, send)
            else:
                await self.modern.handle_request(scope, receive, send)
        finally:
            _modern_server.reset(token)

    async def _long_call(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A 2026-07-28 call that may run long, cancelled when its client goes away (``mcpserver.long_calls``).

        One that asked for notifications (a ``progressToken``, a log level in ``_meta``) goes to the streaming
        manager, which sends them and sees the client leave. Any other is answered as JSON by ``self.modern``, cheaper
        per call than the streaming manager's deferred answer (``bench/gateway_bench.py``), as a ``WatchedCall``.
        Either way the response names the call's parked upstream call, if it has one (``ParkNaming``).
        """
        body = await request_body(receive)
        if body is None:  # the client left before it finished sending the request
            return
        if _PROGRESS_KEY in body or _LOG_LEVEL_KEY in body:
            naming = ParkNaming()
            token = park_naming.set(naming)
            try:
                await self.streaming.handle_request(scope, replayed(body, receive), naming_parked_call(send, naming))
            finally:
                park_naming.reset(token)
            return
        call = WatchedCall(body, receive, send)
        token = park_naming.set(call)
        try:
            await call.run(self.modern.handle_request, scope)
        finally:
            park_naming.reset(token)


# The members of a 2026-07-28 request that ask for notifications during the call: its progress, its log messages. A
# plain substring test of the body: a false positive (the bytes inside an argument) only costs the streaming path.
_PROGRESS_KEY, _LOG_LEVEL_KEY = b'"progressToken"', b'"io.modelcontextprotocol/logLevel"'


async def _load_catalog() -> CatalogSnapshot | None:
    """Build the catalog snapshot before the first call, which would otherwise wait for it (the process's watcher
    starts with it). Without a database the endpoint starts anyway; its first call tries again."""
    try:
        return await acatalog_snapshot()
    except DatabaseError as exc:  # unreachable, or not migrated yet
        logger.warning("The catalog could not be loaded at start (%s); the first call loads it", type(exc).__name__)
        return None


def _tools_digest() -> str:
    """Changes exactly when ``tools/list`` would answer differently (for some token) at ``/mcp``, or a named server's
    composition or description changes (an upstream's own path changes only with ``/mcp``)."""
    listed = [
        (
            name,
            spec.title,
            spec.description,
            spec.listed_input_schema,
            spec.output_schema,
            spec.annotations,
            spec.execution,
        )
        for name, spec in sorted(_enabled_tools().items())
    ]
    named = [
        (config.name, config.description, sorted(config.tools), sorted(map(repr, config.upstreams.items())))
        for _, config in sorted(gateway.named_servers.items())
    ]
    return hashlib.sha256(json.dumps([listed, named], sort_keys=True, default=str).encode()).hexdigest()

"""Telling clients that what they listed has changed: the tools, the catalog's resources and its prompts.

A client lists once and keeps the list, so a change has to reach it as a notification, in the form its protocol
generation knows:

- **2026-07-28** clients ask for them with ``subscriptions/listen``, whose response is the stream of
  notifications they asked for (the SDK's ``ListenHandler`` over this feed's in-process bus, ``SubscriptionBus``).
  A token's listen streams are capped like its sessions (``MAX_SESSIONS_PER_TOKEN``), and opening one counts
  against its rate limit.
- **2025-11-25** sessions get them on their standalone stream (the GET): the list-changed notifications the
  initialize result's capabilities promise (``listChanged``), and ``notifications/resources/updated`` for the
  resources the session subscribed to (``resources/subscribe``). A session is known from its
  ``notifications/initialized`` until its connection closes (found through the SDK's internals,
  ``mcpserver.sdk_internals.sessions``; without its fast paths, 2025-11-25 sessions are not told).

A token that may not read the catalog (``ClientToken.can_read_catalog``) hears nothing about resources or prompts.
A client at an upstream's own path (``/mcp/<upstream>``) hears of that upstream's list changes alone, one at ``/mcp``
of every server's (``publish(..., server=)``). The updates of an upstream resource go to each subscriber alone
(``tell``, ``tell_stream``: ``mcpserver.offerings`` knows who subscribed to what), never to whoever names the same URI,
and a list change said on a client's own upstream session to that client's session alone (``tell_session``).

Each process tells its own clients. Every process follows the catalog revision itself (``errcatalog.catalog
.snapshot``: the swap of a snapshot sends ``caches_invalidated`` for the "catalog" scope) and holds its own
upstream connections, so a change reaches the clients of every process without a bus between processes. What
changed is worked out by the sources (``mcpserver.reference`` for the catalog, ``mcpserver.server`` for the
tools), which compare digests and publish only real changes; a burst of catalog swaps is looked at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from errcatalog.caching import caches_invalidated
from errcatalog.vocabulary import JSONRPC_SESSION_LIMIT, ROOT_SERVER
from mcpserver.auth import ClientIdentity, request_client, request_server, request_session_id
from mcpserver.jsonrpc_errors import rendered_error, sanctioned_error
from mcpserver.ratelimit import rate_limit_answer, rate_limit_retry_after
from mcpserver.sdk_internals.sessions import session_connection

logger = logging.getLogger("mcpserver.changes")

# Listen streams of one process, whoever opened them (the SDK refuses more with -32603); and events buffered per
# stream for a client that reads slowly (the SDK ends a stream whose backlog is full: the client listens again).
MAX_LISTEN_STREAMS = 4096
MAX_BUFFERED_EVENTS = 256
# How long telling one 2025 session may take before it is skipped (a client that stopped reading its stream).
NOTIFY_TIMEOUT_SECONDS = 5.0
# A token at its cap of listen streams: the session cap's code (a quota of ours, outside the reserved range).
LISTEN_LIMIT_MESSAGE = (
    "Too many open subscriptions/listen streams for this token: at most {limit} may be open at once "
    "(ERRCATALOG_MCP_MAX_SESSIONS_PER_TOKEN). Close a stream you no longer read, then listen again."
)


@dataclass(slots=True, eq=False)
class _Session:
    """A 2025-11-25 session this process serves: how to reach its standalone stream, what it asked to hear, and the
    server it was opened at (``mcpserver.virtual_servers``)."""

    session: ServerSession
    reads_catalog: bool
    server: str = ROOT_SERVER
    session_id: str | None = None  # its ``Mcp-Session-Id``
    uris: set[str] = field(default_factory=set)


# The listen stream being opened in this task, and its server: read by ``RoutedBus.subscribe``, which the SDK's
# listen handler calls in the task that serves the stream.
_opening_stream: ContextVar[tuple[object, str] | None] = ContextVar("opening_listen_stream", default=None)


# Whether a client at server ``at`` hears of list changes of server ``server`` (``ChangeFeed.hears``).
Hears = Callable[[str, str], bool]


class RoutedBus(InMemorySubscriptionBus):
    """The SDK's in-process bus, whose listeners also know the listen stream they serve and its server, so that an
    event can go to one stream (``publish_to``) or to the streams that hear of one server (``publish(...,
    server=)``, by ``hears``)."""

    def __init__(self, hears: Callable[[], Hears]) -> None:
        super().__init__()
        self._hears = hears
        self._routes: dict[object, tuple[Callable[[ServerEvent], None], object | None, str]] = {}

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        opening = _opening_stream.get()
        stream, server = opening if opening is not None else (None, ROOT_SERVER)
        token = object()
        self._routes[token] = (listener, stream, server)

        def unsubscribe() -> None:
            self._routes.pop(token, None)

        return unsubscribe

    async def publish(self, event: ServerEvent, *, server: str | None = None) -> None:
        """Deliver ``event`` to every stream, or with ``server`` to those that hear of that server's lists."""
        hears = self._hears()
        await self._deliver(event, lambda stream, at: server is None or hears(at, server))

    async def publish_to(self, stream: object, event: ServerEvent) -> None:
        """Deliver ``event`` to ``stream`` alone (it still filters by what the stream asked for)."""
        await self._deliver(event, lambda listening, at: listening is stream)

    async def _deliver(self, event: ServerEvent, chosen: Callable[[object | None, str], bool]) -> None:
        for listener, stream, server in list(self._routes.values()):
            if not chosen(stream, server):
                continue
            try:
                listener(event)
            except Exception:  # one bad listener must not starve the others
                logger.exception("A listen stream's listener failed")
        await anyio.lowlevel.checkpoint()


def hears_own_and_roots(at: str, server: str) -> bool:
    """A client at server ``at`` hears of list changes of ``server`` when it is that server or ``/mcp`` (which serves
    every upstream's offerings): the default of ``ChangeFeed.hears``."""
    return at in (server, ROOT_SERVER)


class ChangeFeed:
    """One per MCP app: its listen handler, its 2025 sessions, and the sources that publish changes to them."""

    def __init__(self) -> None:
        # Who hears of which server's list changes: replaced by whoever knows more servers (``mcpserver.offerings``).
        self.hears: Hears = hears_own_and_roots
        self.bus = RoutedBus(lambda: self.hears)
        self._listen = ListenHandler(
            self.bus, max_subscriptions=MAX_LISTEN_STREAMS, max_buffered_events=MAX_BUFFERED_EVENTS
        )
        self._sessions: dict[int, _Session] = {}
        self._listening: dict[str, int] = {}
        self._catalog_sources: list[Callable[[], Awaitable[None]]] = []
        self._task_group: anyio.abc.TaskGroup | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._catalog_due = False
        self._catalog_running = False

    # --- Lifetime ----------------------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Follow catalog swaps until the app stops; then end every listen stream gracefully."""
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            self._loop = asyncio.get_running_loop()
            uid = f"mcpserver.changes.{id(self)}"
            caches_invalidated.connect(self._caches_invalidated, weak=False, dispatch_uid=uid)
            try:
                yield
            finally:
                caches_invalidated.disconnect(dispatch_uid=uid)
                self._loop = None
                self._listen.close()
                task_group.cancel_scope.cancel()
        self._task_group = None

    def on_catalog_change(self, source: Callable[[], Awaitable[None]]) -> None:
        """Run ``source`` after this process swaps in a new catalog snapshot (it publishes what changed)."""
        self._catalog_sources.append(source)

    def soon(self, source: Callable[[], Awaitable[None]]) -> bool:
        """Run ``source`` on the feed's task group (from the event loop); False, and nothing done, when the feed is not
        running."""
        if self._task_group is None:
            return False
        self._task_group.start_soon(self._run_source, source)
        return True

    def _caches_invalidated(self, sender: Any, *, scope: str, **kwargs: Any) -> None:
        # Sent by whichever thread swapped the snapshot (the watcher, a writer's), or by the loop itself.
        # Never raises: the signal's sender is the catalog build, which must not fail for a feed that is stopping.
        loop = self._loop
        if scope == "catalog" and loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._catalog_changed)

    def _catalog_changed(self) -> None:
        self._catalog_due = True
        if not self._catalog_running and self._task_group is not None:
            self._catalog_running = True
            self._task_group.start_soon(self._follow_catalog)

    async def _follow_catalog(self) -> None:
        # One pass for a burst of swaps: a swap during a pass is looked at by the next one.
        try:
            while self._catalog_due:
                self._catalog_due = False
                for source in self._catalog_sources:
                    await self._run_source(source)
        finally:
            self._catalog_running = False

    async def _run_source(self, source: Callable[[], Awaitable[None]]) -> None:
        try:
            await source()
        except Exception:  # a source's bug must not end the feed; the clients miss one change
            logger.exception("Working out what changed failed")

    # --- Publishing --------------------------------------------------------------------------------------------

    async def publish(self, *events: ServerEvent, server: str | None = None) -> None:
        """Tell every listen stream and 2025 session that asked for them about ``events``; with ``server``, only
        those at that server's path or at ``/mcp`` (the lists of that server changed)."""
        for event in events:
            await self.bus.publish(event, server=server)
            for known in list(self._sessions.values()):
                if server is not None and not self.hears(known.server, server):
                    continue
                if _wants(known, event) and self._task_group is not None:
                    self._task_group.start_soon(_tell, known.session, _notification(event))

    def tell_session(self, session_id: str, event: ServerEvent, *, server: str) -> None:
        """Tell the 2025 session ``session_id`` alone about ``event`` (a list change of ``server`` said on that
        session's own upstream session), when it would hear of it from ``publish``."""
        for known in list(self._sessions.values()):
            if known.session_id != session_id or not self.hears(known.server, server) or not _wants(known, event):
                continue
            if self._task_group is not None:
                self._task_group.start_soon(_tell, known.session, _notification(event))

    def tell(self, session: ServerSession, event: ResourceUpdated) -> None:
        """Tell one 2025 session of ``event`` (a resource it subscribed to changed), in the background."""
        if self._task_group is not None:
            self._task_group.start_soon(_tell, session, _notification(event))

    def tell_stream(self, stream: object, event: ResourceUpdated) -> None:
        """Tell one listen stream (``listen``'s ``stream``) of ``event``, in the background."""
        if self._task_group is not None:
            self._task_group.start_soon(self.bus.publish_to, stream, event)

    # --- 2026-07-28: subscriptions/listen ------------------------------------------------------------------------

    async def listen(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.SubscriptionsListenRequestParams,
        *,
        stream: object | None = None,
    ) -> types.SubscriptionsListenResult:
        """``subscriptions/listen``: the SDK's handler, within the token's scope, rate limit and cap of streams.
        ``stream`` names the stream for ``tell_stream``."""
        _opening_stream.set((stream if stream is not None else object(), request_server(ctx.request)))
        client = request_client(ctx.request)
        if client is None:
            return await self._listen(ctx, params)
        if not client.can_read_catalog:
            asked = params.notifications.model_copy(
                update={"prompts_list_changed": None, "resources_list_changed": None, "resource_subscriptions": None}
            )
            params = params.model_copy(update={"notifications": asked})
        await admit(client, ctx.protocol_version)
        limit = settings.MCP["MAX_SESSIONS_PER_TOKEN"]
        if self._listening.get(client.key, 0) >= limit:
            raise sanctioned_error(
                JSONRPC_SESSION_LIMIT,
                LISTEN_LIMIT_MESSAGE.format(limit=limit),
                {"limit": "listen_streams_per_token", "max_streams": limit, "retry_capable": True},
            )
        self._listening[client.key] = self._listening.get(client.key, 0) + 1
        try:
            return await self._listen(ctx, params)
        finally:
            left = self._listening[client.key] - 1
            if left:
                self._listening[client.key] = left
            else:
                del self._listening[client.key]

    def listen_streams(self, client_key: str) -> int:
        """Listen streams ``client_key`` has open in this process."""
        return self._listening.get(client_key, 0)

    # --- 2025-11-25: sessions and their resource subscriptions ---------------------------------------------------

    async def session_initialized(self, ctx: ServerRequestContext[Any, Any], params: types.NotificationParams) -> None:
        """``notifications/initialized`` of a 2025 session: from now on it hears of changes until it ends."""
        connection = session_connection(ctx.session)
        if connection is None or connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        key = id(connection)
        client = request_client(ctx.request)
        self._sessions[key] = _Session(
            ctx.session,
            reads_catalog=client is None or client.can_read_catalog,
            server=request_server(ctx.request),
            session_id=request_session_id(ctx.request),
        )
        connection.exit_stack.callback(self._sessions.pop, key, None)

    def subscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        """``resources/subscribe`` of a 2025 session: ``notifications/resources/updated`` when ``uri`` changes."""
        known = self._sessions.get(id(session_connection(ctx.session)))
        if known is not None:
            known.uris.add(uri)

    def unsubscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        known = self._sessions.get(id(session_connection(ctx.session)))
        if known is not None:
            known.uris.discard(uri)

    def sessions(self) -> int:
        """2025 sessions this process would tell of a change."""
        return len(self._sessions)


async def admit(client: ClientIdentity, protocol_version: str) -> None:
    """Count a request against ``client``'s rate limit; raise the catalog's RATE_LIMIT error when it is over."""
    retry_after = await rate_limit_retry_after(client.key, per_minute=settings.MCP["RATE_LIMIT_PER_MINUTE"])
    if retry_after is not None:
        raise rendered_error(await rate_limit_answer(retry_after), protocol_version=protocol_version)


def _wants(known: _Session, event: ServerEvent) -> bool:
    if isinstance(event, ResourceUpdated):
        return event.uri in known.uris
    return known.reads_catalog or isinstance(event, ToolsListChanged)


def _notification(event: ServerEvent) -> types.ServerNotification:
    if isinstance(event, ToolsListChanged):
        return types.ToolListChangedNotification()
    if isinstance(event, PromptsListChanged):
        return types.PromptListChangedNotification()
    if isinstance(event, ResourcesListChanged):
        return types.ResourceListChangedNotification()
    return types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=event.uri))


async def _tell(session: ServerSession, notification: types.ServerNotification) -> None:
    # A session that ended meanwhile refuses the write; its exit stack forgets it.
    with (
        anyio.move_on_after(NOTIFY_TIMEOUT_SECONDS),
        contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError),
    ):
        await session.send_notification(notification)

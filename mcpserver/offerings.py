"""The upstreams' resources, resource templates, prompts and completions, served at ``/mcp`` and at each upstream's
own path.

- At ``/mcp/<upstream>`` (``at_upstream``): the upstream's own, unchanged and by their own names and URIs; a listing
  is every page the upstream gives (``mcpserver.gateway.offerings.MAX_PAGES`` at most), in one page.
- At ``/mcp`` (``at_root``), and at a named server for the upstreams it is composed of: every upstream's beside the
  catalog's (``mcpserver.reference``, in front) and an
  extension's (behind): prompts as ``<prefix>__<name>``, URIs and templates as
  ``errcatalog-upstream://<upstream>/<its URI>`` (``mcpserver.gateway.offerings`` says why). A URI in the upstream's
  own form (a tool result's ``resource_link``, which passes unchanged) is read at the upstream whose result carried
  it to this client, else at the one upstream that claims it; two claims are refused.
- ``resources/subscribe`` holds the upstream's URI for this client (``mcpserver.gateway.offerings.Subscriptions``):
  on the client's own upstream session where it has one (its updates are then its alone), else on the shared one
  (subscribed upstream once for all who hold it). Each update reaches each client that holds that URI of that
  upstream, once per URI it subscribed with, as it named it (namespaced at ``/mcp``, raw at ``/mcp/<upstream>``);
  a 2026-07-28 listen stream's resource subscriptions hold their URIs while it is open (``listening``). What a
  2025-11-25 session or a listen stream still holds when it ends is let go upstream.
- An upstream's list changes (its own notices, and its connecting or going away) reach the clients of ``/mcp``, of
  its own path and of the named servers composed of it (``_hears``), through ``mcpserver.changes``, in both
  generations; one the upstream says on a client's own upstream session reaches that client alone.
- Reads, prompts and completions of a 2025-11-25 session go over its own upstream session where it has one, as its
  tool calls do (``mcpserver.gateway.client_sessions``).

Successful payloads pass unchanged, as tool results do: they are what the client asked the upstream for. Failures are
ours: each is the ``UpstreamError`` the connection raises for a tool call that fails the same way (JSON-RPC error,
timeout, connection, an answer that is not MCP, HTTP status, open circuit), classified by the catalog's rules and
rendered as a JSON-RPC error from the catalog; the upstream's text chooses and never appears. A URI, prompt or
upstream that is not served here is answered as an unknown one is at ``/mcp``. Each relayed request is counted in
Prometheus (``errcatalog_upstream_requests_total``, with the catalog code of a failure), not recorded as an outcome
event: those are tool calls, which a model makes and retries, and every figure of the dashboard is theirs.

What an upstream lists passes the screen its tools' metadata does (``mcpserver.gateway.offerings``): what it flags is
not listed, and a flagged prompt is not served.

Who sees them: a token that may read the catalog's resources and prompts (``can_read_catalog``) sees an upstream's
too, unless its tool scope names none of that upstream's tools; the servers it may use are the guard's
(``/mcp/<upstream>``). No token sees more than it did before upstreams' were served.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import sentry_sdk
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError

from errcatalog.catalog.snapshot import acatalog_snapshot
from errcatalog.errors import bounded_retry_after, http_status, parse_retry_after
from errcatalog.gateway import inbox
from errcatalog.gateway.models import TOOL_SEPARATOR
from errcatalog.outcomes import prometheus
from errcatalog.render import Failure, render
from errcatalog.render.classify import classification, facts_from_exception, known
from errcatalog.vocabulary import ROOT_SERVER
from mcpserver import reference
from mcpserver.auth import ClientIdentity, request_client, request_server, request_session_id
from mcpserver.changes import ChangeFeed, admit
from mcpserver.gateway import gateway, upstream_alone
from mcpserver.gateway import offerings as relay
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.gateway.failures import UpstreamError
from mcpserver.gateway.notices import SHARED, Connected, Notice, follow
from mcpserver.jsonrpc_errors import rendered_error
from mcpserver.locale import requested_locales
from mcpserver.reference import unknown_error

logger = logging.getLogger("mcpserver.offerings")

Handler = Callable[..., Awaitable[Any]]
Ctx = ServerRequestContext[Any, Any]
# The SDK Server keywords served here: the catalog's, and completion (an extension's handler of the same name is
# asked after the upstreams at /mcp).
HANDLED = (*reference.HANDLED, "on_completion")
# The resource subscriptions of one listen stream that are held upstream (the rest are heard of only if the upstream
# says so anyway).
MAX_LISTEN_URIS = 64


class UpstreamOfferings:
    """The handlers of one MCP app for the upstreams' resources, prompts and completions (see the module docstring)."""

    def __init__(self, feed: ChangeFeed, others: Mapping[str, Handler]) -> None:
        self.feed = feed
        self._others = others
        self.subscriptions = relay.Subscriptions()
        self._stop_following = follow(self._heard)
        self._stop_ending = gateway.on_client_session_ended(self._session_ended)
        self._due: set[tuple[str, type]] = set()  # list changes about to be published
        feed.hears = _hears

    def at_root(self) -> dict[str, Handler]:
        """The handlers of ``/mcp`` (behind the catalog's, in front of the extensions')."""
        return {name: getattr(self, name.removeprefix("on_")) for name in HANDLED}

    def at_upstream(self) -> dict[str, Handler]:
        """The handlers of an upstream's own path."""
        return {name: getattr(self, "own_" + name.removeprefix("on_")) for name in HANDLED}

    # --- /mcp ---------------------------------------------------------------------------------------------------

    async def list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        ours: list[types.Resource] = []
        if params is None or params.cursor is None:  # a cursor is the extension's: ours fit on the first page
            for connection in self._offered(ctx):
                name = connection.config.name
                for resource in await _listed(connection, "resources"):
                    ours.append(resource.model_copy(update={"uri": relay.namespaced_uri(name, resource.uri)}))
        theirs = await self._theirs("on_list_resources", ctx, params, types.ListResourcesResult(resources=[]))
        return types.ListResourcesResult(resources=ours + theirs.resources, next_cursor=theirs.next_cursor)

    async def list_resource_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        ours: list[types.ResourceTemplate] = []
        if params is None or params.cursor is None:
            for connection in self._offered(ctx):
                name = connection.config.name
                for template in await _listed(connection, "templates"):
                    namespaced = relay.namespaced_uri(name, template.uri_template)
                    ours.append(template.model_copy(update={"uri_template": namespaced}))
        empty = types.ListResourceTemplatesResult(resource_templates=[])
        theirs = await self._theirs("on_list_resource_templates", ctx, params, empty)
        return types.ListResourceTemplatesResult(
            resource_templates=ours + theirs.resource_templates, next_cursor=theirs.next_cursor
        )

    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        ours: list[types.Prompt] = []
        if params is None or params.cursor is None:
            for connection in self._offered(ctx):
                prefix = connection.config.prefix
                for prompt in await _listed(connection, "prompts"):
                    ours.append(prompt.model_copy(update={"name": relay.prompt_name(prefix, prompt.name)}))
        theirs = await self._theirs("on_list_prompts", ctx, params, types.ListPromptsResult(prompts=[]))
        return types.ListPromptsResult(prompts=ours + theirs.prompts, next_cursor=theirs.next_cursor)

    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        target = await self._resource(ctx, params.uri)
        if target is None:
            return await self._other("on_read_resource", ctx, params)
        connection, uri = target
        return await _relayed(ctx, connection, relay.read(connection, uri, channel=_channel(ctx, connection)))

    async def subscribe_resource(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        target = await self._resource(ctx, params.uri)
        if target is None:
            return await self._other("on_subscribe_resource", ctx, params)
        await self._hold(ctx, *target, params.uri)
        return types.EmptyResult()

    async def unsubscribe_resource(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        target = await self._resource(ctx, params.uri, quiet=True)
        if target is None:
            return await self._other("on_unsubscribe_resource", ctx, params, types.EmptyResult())
        await self._let_go(ctx, *target, params.uri)
        return types.EmptyResult()

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        found = self._prompt(ctx, params.name)
        if found is None:
            return await self._other("on_get_prompt", ctx, params, prompt=True)
        connection, name = found
        await self._screened_prompt(ctx, connection, name)
        channel = _channel(ctx, connection)
        return await _relayed(ctx, connection, relay.get_prompt(connection, name, params.arguments, channel=channel))

    async def completion(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            found = self._prompt(ctx, ref.name)
            if found is not None:
                connection, name = found
                theirs = ref.model_copy(update={"name": name})
                channel = _channel(ctx, connection)
                answer = relay.complete(connection, theirs, params.argument, params.context, channel=channel)
                return await _relayed(ctx, connection, answer)
        elif relay.is_namespaced(ref.uri):
            target = await self._resource(ctx, ref.uri)
            if target is not None:
                connection, uri = target
                theirs_ref = ref.model_copy(update={"uri": uri})
                channel = _channel(ctx, connection)
                return await _relayed(
                    ctx,
                    connection,
                    relay.complete(connection, theirs_ref, params.argument, params.context, channel=channel),
                )
        return await self._other("on_completion", ctx, params, _NO_COMPLETION)

    # --- /mcp/<upstream> -------------------------------------------------------------------------------------------

    async def own_list_resources(self, ctx: Ctx, params: Any) -> types.ListResourcesResult:
        connection = self._own(ctx)
        return types.ListResourcesResult(resources=list(await _listed(connection, "resources")) if connection else [])

    async def own_list_resource_templates(self, ctx: Ctx, params: Any) -> types.ListResourceTemplatesResult:
        connection = self._own(ctx)
        templates = list(await _listed(connection, "templates")) if connection else []
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def own_list_prompts(self, ctx: Ctx, params: Any) -> types.ListPromptsResult:
        connection = self._own(ctx)
        return types.ListPromptsResult(prompts=list(await _listed(connection, "prompts")) if connection else [])

    async def own_read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        connection = await self._own_admitted(ctx, params.uri)
        channel = _channel(ctx, connection)
        return await _relayed(ctx, connection, relay.read(connection, params.uri, channel=channel))

    async def own_subscribe_resource(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        connection = await self._own_admitted(ctx, params.uri)
        await self._hold(ctx, connection, params.uri, params.uri)
        return types.EmptyResult()

    async def own_unsubscribe_resource(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        connection = self._own(ctx)
        if connection is not None:
            await self._let_go(ctx, connection, params.uri, params.uri)
        return types.EmptyResult()

    async def own_get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        connection = self._own(ctx)
        if connection is None:
            raise await unknown_error(ctx, prompt=True)
        await _admit(ctx)
        await self._screened_prompt(ctx, connection, params.name)
        answer = relay.get_prompt(connection, params.name, params.arguments, channel=_channel(ctx, connection))
        return await _relayed(ctx, connection, answer)

    async def own_completion(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        connection = self._own(ctx)
        if connection is None:
            return _NO_COMPLETION
        await _admit(ctx)
        channel = _channel(ctx, connection)
        answer = relay.complete(connection, params.ref, params.argument, params.context, channel=channel)
        return await _relayed(ctx, connection, answer)

    # --- 2026-07-28 listen streams -----------------------------------------------------------------------------------

    def listening(self, listen: Handler) -> Handler:
        """``listen`` (``ChangeFeed.listen``), holding the upstream URIs among a stream's resource subscriptions while
        it is open (on the upstream's shared session), as a 2025 session's ``resources/subscribe`` does; their
        updates go to this stream alone, as it named them."""

        async def handle(ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> Any:
            stream = object()
            for named in (params.notifications.resource_subscriptions or [])[:MAX_LISTEN_URIS]:
                target = await self._target(ctx, named)
                if target is None:
                    continue
                connection, uri = target
                delivery = _Delivery(named, stream=stream)
                try:
                    await self.subscriptions.subscribe(connection, uri, (stream, named), delivery, channel=SHARED)
                except UpstreamError as exc:  # heard of only if the upstream tells anyway
                    logger.info("Upstream %s: a listen stream's subscription failed (%s)", exc.upstream, exc.for_staff)
            try:
                return await listen(ctx, params, stream=stream)
            finally:
                with anyio.CancelScope(shield=True):
                    await self.subscriptions.release(stream, gateway.connections)

        return handle

    async def _target(self, ctx: Ctx, uri: str) -> tuple[UpstreamConnection, str] | None:
        if upstream_alone(request_server(ctx.request)):
            connection = self._own(ctx)
            return (connection, uri) if connection is not None else None
        try:
            return await self._resource(ctx, uri, quiet=True)
        except MCPError:
            return None

    # --- What an upstream tells ----------------------------------------------------------------------------------

    def _heard(self, upstream: str, notice: Notice, channel: str) -> None:
        if isinstance(notice, Connected):
            connection = gateway.connections.get(upstream)
            if connection is not None:
                self.feed.soon(functools.partial(self.subscriptions.renew, connection, channel))
            return
        if isinstance(notice, types.ResourceUpdatedNotification):
            uri = notice.params.uri
            if len(uri) > relay.MAX_URI_CHARS:
                return
            # To each who holds that URI of this upstream on this channel, as each named it.
            for delivery in self.subscriptions.deliveries(upstream, channel, uri):
                assert isinstance(delivery, _Delivery)
                if delivery.session is not None:
                    self.feed.tell(delivery.session, ResourceUpdated(uri=delivery.uri))
                else:
                    self.feed.tell_stream(delivery.stream, ResourceUpdated(uri=delivery.uri))
            return
        event: ServerEvent
        if isinstance(notice, types.ResourceListChangedNotification):
            relay.forget_listings(upstream, "resources", "templates")
            event = ResourcesListChanged()
        else:
            relay.forget_listings(upstream, "prompts")
            event = PromptsListChanged()
        if channel != SHARED:
            # Said on a client's own upstream session: it is about that session, so its client alone is told. The
            # others hear of a change when the upstream says so on the shared session, and list afresh meanwhile.
            self.feed.tell_session(channel, event, server=upstream)
            return

        # A burst of the same notice (an upstream may send many) goes out once: those that come before the publish
        # runs join it.
        due = (upstream, type(event))
        if due in self._due:
            return

        async def publish() -> None:
            self._due.discard(due)
            await self.feed.publish(event, server=upstream)

        if self.feed.soon(publish):
            self._due.add(due)

    def _session_ended(self, session_id: str) -> None:
        """Our 2025-11-25 session ended: what it held is let go (upstream too, where nobody else holds it)."""

        async def release() -> None:
            released = await self.subscriptions.release(session_id, gateway.connections)
            if released:
                logger.debug("A session ended holding %d upstream resource subscriptions; let go", released)

        self.feed.soon(release)

    # --- Holding subscriptions -------------------------------------------------------------------------------------

    async def _hold(self, ctx: Ctx, connection: UpstreamConnection, uri: str, named: str) -> None:
        subscriber, channel = _subscriber(ctx, connection)
        delivery = _Delivery(named, session=ctx.session)
        hold = self.subscriptions.subscribe(connection, uri, (subscriber, named), delivery, channel=channel)
        await _relayed(ctx, connection, hold)

    async def _let_go(self, ctx: Ctx, connection: UpstreamConnection, uri: str, named: str) -> None:
        subscriber, channel = _subscriber(ctx, connection)
        await self.subscriptions.unsubscribe(connection, uri, (subscriber, named), channel=channel)

    async def _screened_prompt(self, ctx: Ctx, connection: UpstreamConnection, name: str) -> None:
        """A prompt whose listed metadata the screen withholds is not served (``relay.withheld``)."""
        if await relay.withheld(connection, "prompts", name):
            raise await unknown_error(ctx, prompt=True)

    # --- Finding the upstream --------------------------------------------------------------------------------------

    def _offered(self, ctx: Ctx) -> list[UpstreamConnection]:
        """The upstreams whose offerings this request's caller sees at /mcp, or at the named server it was sent to
        (those it is composed of)."""
        client = request_client(ctx.request)
        named = gateway.named_servers.get(request_server(ctx.request))
        return [
            c
            for c in gateway.connections.values()
            if _sees(client, c.config.prefix) and (named is None or c.config.name in named.upstreams)
        ]

    def _own(self, ctx: Ctx) -> UpstreamConnection | None:
        """The upstream of this request's path, when its caller sees its offerings."""
        connection = gateway.connections.get(request_server(ctx.request))
        if connection is None or not _sees(request_client(ctx.request), connection.config.prefix):
            return None
        return connection

    async def _own_admitted(self, ctx: Ctx, uri: str) -> UpstreamConnection:
        connection = self._own(ctx)
        if connection is None or len(uri) > relay.MAX_URI_CHARS:
            raise await unknown_error(ctx)
        await _admit(ctx)
        return connection

    async def _resource(self, ctx: Ctx, uri: str, *, quiet: bool = False) -> tuple[UpstreamConnection, str] | None:
        """The upstream and its own URI that ``uri`` names at /mcp, for a caller admitted to read it; None for a URI of
        none of them (the extension's, or unknown). A namespaced URI that names nothing is RESOURCE_NOT_FOUND, and so
        is an upstream URI two upstreams claim (INVALID_PARAMS: the namespaced form is unambiguous)."""
        if len(uri) > relay.MAX_URI_CHARS:
            raise await unknown_error(ctx)
        offered = {c.config.name: c for c in self._offered(ctx)}
        if relay.is_namespaced(uri):
            split = relay.split_uri(uri)
            connection = offered.get(split[0]) if split is not None else None
            if split is None or connection is None:
                raise await unknown_error(ctx)
            if not quiet:
                await _admit(ctx)
            return connection, split[1]
        client = request_client(ctx.request)
        linked = relay.linked_upstream(client.key if client else None, uri)
        if linked is not None and linked in offered:
            found = [offered[linked]]
        else:
            found = await relay.claimants(offered.values(), uri)
        if not found:
            return None
        if len(found) > 1:
            logger.info("A raw resource URI is claimed by %d upstreams; refused as ambiguous", len(found))
            raise await _refused(ctx, "INVALID_PARAMS")
        if not quiet:
            await _admit(ctx)
        return found[0], uri

    def _prompt(self, ctx: Ctx, name: str) -> tuple[UpstreamConnection, str] | None:
        prefix, separator, theirs = name.partition(TOOL_SEPARATOR)
        if not separator or not theirs:
            return None
        for connection in self._offered(ctx):
            if connection.config.prefix == prefix:
                return connection, theirs
        return None

    async def _theirs(self, keyword: str, ctx: Ctx, params: Any, empty: Any) -> Any:
        other = self._others.get(keyword)
        return await other(ctx, params) if other is not None else empty

    async def _other(self, keyword: str, ctx: Ctx, params: Any, default: Any = None, *, prompt: bool = False) -> Any:
        """The extension's answer, when one serves ``keyword``; else ``default``, or the unknown one's error."""
        other = self._others.get(keyword)
        if other is not None:
            return await other(ctx, params)
        if default is not None:
            return default
        raise await unknown_error(ctx, prompt=prompt)


_NO_COMPLETION = types.CompleteResult(completion=types.Completion(values=[]))


def _hears(at: str, server: str) -> bool:
    """Whether a client at server ``at`` hears of the list changes of server ``server``: at that server, at ``/mcp``,
    and at a named server composed of that upstream (a named server serves the catalog's too, as ``/mcp`` does)."""
    if at in (server, ROOT_SERVER):
        return True
    named = gateway.named_servers.get(at)
    return named is not None and (server == ROOT_SERVER or server in named.upstreams)


def _sees(client: ClientIdentity | None, prefix: str) -> bool:
    """Whether ``client`` sees the offerings of the upstream served under ``prefix`` (see the module docstring)."""
    if client is None:
        return True
    if not client.can_read_catalog:
        return False
    return not client.tool_scope or any(tool.startswith(prefix + TOOL_SEPARATOR) for tool in client.tool_scope)


@dataclass(frozen=True, slots=True, eq=False)
class _Delivery:
    """Where an upstream resource's update goes: a 2025-11-25 session or a listen stream, under the URI it named."""

    uri: str
    session: Any = None
    stream: object | None = None


def _channel(ctx: Ctx, connection: UpstreamConnection) -> str:
    """The upstream session this request goes over: its 2025-11-25 session's own, where it has one."""
    return connection.own_channel(request_session_id(ctx.request))


def _subscriber(ctx: Ctx, connection: UpstreamConnection) -> tuple[Hashable, str]:
    """Who holds a subscription (the 2025-11-25 session, by its id; a 2026-07-28 request has none, its listen stream
    holds) and the channel it is held on."""
    session_id = request_session_id(ctx.request)
    return (session_id if session_id is not None else _SessionKey.of(ctx.session)), connection.own_channel(session_id)


class _SessionKey:
    """A session without an id (outside HTTP), weakly: a subscription a session never let go of is not what keeps it
    alive."""

    _keys: weakref.WeakKeyDictionary[object, _SessionKey] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, session: object) -> Hashable:
        try:
            key = cls._keys.get(session)
            if key is None:
                key = cls._keys[session] = cls()
            return key
        except TypeError:  # not weakly referable: the session itself
            return session


async def _listed(connection: UpstreamConnection, kind: str) -> tuple[Any, ...]:
    """What the upstream lists of ``kind``; nothing when it cannot be listed now (its failure is logged, as a
    tool listing's is, and the client sees the other upstreams')."""
    try:
        return await relay.listing(connection, kind)
    except UpstreamError as exc:
        logger.info("Upstream %s: its %s could not be listed (%s)", connection.config.name, kind, exc.for_staff)
        return ()


async def _relayed[T](ctx: Ctx, connection: UpstreamConnection, request: Awaitable[T]) -> T:
    """``request``'s answer; its ``UpstreamError`` as the catalog's JSON-RPC error. Counted either way
    (``prometheus.observe_upstream_request``)."""
    upstream = connection.config.name
    try:
        answer = await request
    except UpstreamError as exc:
        error, code = await _failed(ctx, connection, exc)
        prometheus.observe_upstream_request(upstream, ctx.method, code=code)
        raise error from None
    prometheus.observe_upstream_request(upstream, ctx.method, code=None)
    return answer


async def _failed(ctx: Ctx, connection: UpstreamConnection, exc: UpstreamError) -> tuple[MCPError, str]:
    """The catalog's error for an upstream's failed request, classified by the rules a failed tool call's is, and
    its code."""
    snapshot = await acatalog_snapshot()
    upstream = connection.config.name
    facts = facts_from_exception(exc, upstream=upstream)
    found = classification(snapshot, facts)
    entry = snapshot.entry(found.code)
    inbox.note(upstream, "", facts.kind, facts.text, classified=known(entry.code, found.rule))
    event_id = None
    if entry.system and sentry_sdk.get_client().is_active():
        event_id = sentry_sdk.capture_exception(exc, fingerprint=["errcatalog", entry.code], tags={"code": entry.code})
    # Its text is the upstream's, cut and redacted: for people, in the log.
    logger.warning("Upstream %s failed a %s request with %s: %s", upstream, ctx.method, entry.code, exc)
    retry_after = None
    if entry.retryable:
        seconds = parse_retry_after(exc.retry_after)
        retry_after = bounded_retry_after(
            entry.retry_after_seconds if seconds is None else seconds,
            maximum=settings.ERRCATALOG["MAX_RETRY_AFTER_SECONDS"],
        )
    failure = Failure(
        entry.code,
        status_code=http_status(exc.status_code),
        event_id=event_id,
        retry_after=retry_after,
        service=upstream,
        network_failure=facts.transport,
    )
    return await _rendered(ctx, failure, snapshot), entry.code


async def _refused(ctx: Ctx, code: str) -> MCPError:
    return await _rendered(ctx, Failure(code), await acatalog_snapshot())


async def _rendered(ctx: Ctx, failure: Failure, snapshot: Any) -> MCPError:
    headers = getattr(ctx.request, "headers", None)
    locales = requested_locales(headers.get("accept-language")) if headers is not None else ()
    rendered = render(snapshot, failure, locales=locales, max_chars=settings.ERRCATALOG["MAX_MESSAGE_CHARS"])
    return rendered_error(rendered, protocol_version=ctx.protocol_version)


async def _admit(ctx: Ctx) -> None:
    """Count a read, prompt, completion or subscription against the caller's rate limit."""
    client = request_client(ctx.request)
    if client is not None:
        await admit(client, ctx.protocol_version)

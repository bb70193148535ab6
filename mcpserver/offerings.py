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
- ``resources/subscribe`` holds the upstream's URI for this client (``Subscriptions``: the process subscribes
  upstream once); the upstream's ``notifications/resources/updated`` reaches the subscribers as the URI they
  subscribed to, and its list changes reach every client, through ``mcpserver.changes`` (both generations; a
  2026-07-28 listen stream's resource subscriptions hold their URIs while it is open, ``listening``).

Successful payloads pass unchanged, as tool results do: they are what the client asked the upstream for. Failures are
ours: each is the ``UpstreamError`` the connection raises for a tool call that fails the same way (JSON-RPC error,
timeout, connection, an answer that is not MCP, HTTP status, open circuit), classified by the catalog's rules and
rendered as a JSON-RPC error from the catalog; the upstream's text chooses and never appears. A URI, prompt or
upstream that is not served here is answered as an unknown one is at ``/mcp``.

Who sees them: a token that may read the catalog's resources and prompts (``can_read_catalog``) sees an upstream's
too, unless its tool scope names none of that upstream's tools; the servers it may use are the guard's
(``/mcp/<upstream>``). No token sees more than it did before upstreams' were served.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

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
from errcatalog.render import Failure, render
from errcatalog.render.classify import classify, facts_from_exception
from errcatalog.vocabulary import UNCLASSIFIED_UPSTREAM_CODES
from mcpserver import reference
from mcpserver.auth import ClientIdentity, request_client, request_server
from mcpserver.changes import ChangeFeed, admit
from mcpserver.gateway import gateway, upstream_alone
from mcpserver.gateway import offerings as relay
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.gateway.failures import UpstreamError
from mcpserver.gateway.notices import Notice, follow
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
        return await _relayed(ctx, connection, relay.read(connection, uri))

    async def subscribe_resource(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        target = await self._resource(ctx, params.uri)
        if target is None:
            return await self._other("on_subscribe_resource", ctx, params)
        connection, uri = target
        await _relayed(ctx, connection, self.subscriptions.subscribe(connection, uri, _subscriber(ctx)))
        self.feed.subscribe(ctx, params.uri)
        return types.EmptyResult()

    async def unsubscribe_resource(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        target = await self._resource(ctx, params.uri, quiet=True)
        if target is None:
            return await self._other("on_unsubscribe_resource", ctx, params, types.EmptyResult())
        connection, uri = target
        self.feed.unsubscribe(ctx, params.uri)
        await self.subscriptions.unsubscribe(connection, uri, _subscriber(ctx))
        return types.EmptyResult()

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        found = self._prompt(ctx, params.name)
        if found is None:
            return await self._other("on_get_prompt", ctx, params, prompt=True)
        connection, name = found
        return await _relayed(ctx, connection, relay.get_prompt(connection, name, params.arguments))

    async def completion(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            found = self._prompt(ctx, ref.name)
            if found is not None:
                connection, name = found
                theirs = ref.model_copy(update={"name": name})
                answer = relay.complete(connection, theirs, params.argument, params.context)
                return await _relayed(ctx, connection, answer)
        elif relay.is_namespaced(ref.uri):
            target = await self._resource(ctx, ref.uri)
            if target is not None:
                connection, uri = target
                theirs_ref = ref.model_copy(update={"uri": uri})
                return await _relayed(
                    ctx, connection, relay.complete(connection, theirs_ref, params.argument, params.context)
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
        return await _relayed(ctx, connection, relay.read(connection, params.uri))

    async def own_subscribe_resource(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        connection = await self._own_admitted(ctx, params.uri)
        await _relayed(ctx, connection, self.subscriptions.subscribe(connection, params.uri, _subscriber(ctx)))
        self.feed.subscribe(ctx, params.uri)
        return types.EmptyResult()

    async def own_unsubscribe_resource(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        connection = self._own(ctx)
        self.feed.unsubscribe(ctx, params.uri)
        if connection is not None:
            await self.subscriptions.unsubscribe(connection, params.uri, _subscriber(ctx))
        return types.EmptyResult()

    async def own_get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        connection = self._own(ctx)
        if connection is None:
            raise await unknown_error(ctx, prompt=True)
        await _admit(ctx)
        return await _relayed(ctx, connection, relay.get_prompt(connection, params.name, params.arguments))

    async def own_completion(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        connection = self._own(ctx)
        if connection is None:
            return _NO_COMPLETION
        await _admit(ctx)
        return await _relayed(ctx, connection, relay.complete(connection, params.ref, params.argument, params.context))

    # --- 2026-07-28 listen streams -----------------------------------------------------------------------------------

    def listening(self, listen: Handler) -> Handler:
        """``listen`` (``ChangeFeed.listen``), holding the upstream URIs among a stream's resource subscriptions while
        it is open, as a 2025 session's ``resources/subscribe`` does."""

        async def handle(ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> Any:
            stream, held = object(), []
            for uri in (params.notifications.resource_subscriptions or [])[:MAX_LISTEN_URIS]:
                target = await self._target(ctx, uri)
                if target is None:
                    continue
                try:
                    await self.subscriptions.subscribe(*target, stream)
                except UpstreamError as exc:  # heard of only if the upstream tells anyway
                    logger.info("Upstream %s: a listen stream's subscription failed (%s)", exc.upstream, exc.for_staff)
                    continue
                held.append(target)
            try:
                return await listen(ctx, params)
            finally:
                for connection, uri in held:
                    await self.subscriptions.unsubscribe(connection, uri, stream)

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

    def _heard(self, upstream: str, notice: Notice) -> None:
        events: list[ServerEvent] = []
        if isinstance(notice, types.ResourceUpdatedNotification):
            uri = notice.params.uri
            if len(uri) <= relay.MAX_URI_CHARS:
                # As the clients of /mcp/<upstream> and those of /mcp subscribed to it.
                events = [ResourceUpdated(uri=uri), ResourceUpdated(uri=relay.namespaced_uri(upstream, uri))]
        elif isinstance(notice, types.ResourceListChangedNotification):
            relay.forget_listings(upstream, "resources", "templates")
            events = [ResourcesListChanged()]
        else:
            relay.forget_listings(upstream, "prompts")
            events = [PromptsListChanged()]
        if events:

            async def publish() -> None:
                await self.feed.publish(*events)

            self.feed.soon(publish)

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


def _sees(client: ClientIdentity | None, prefix: str) -> bool:
    """Whether ``client`` sees the offerings of the upstream served under ``prefix`` (see the module docstring)."""
    if client is None:
        return True
    if not client.can_read_catalog:
        return False
    return not client.tool_scope or any(tool.startswith(prefix + TOOL_SEPARATOR) for tool in client.tool_scope)


def _subscriber(ctx: Ctx) -> object:
    """Who holds a subscription: the 2025-11-25 session (a 2026-07-28 request has none; its listen stream holds)."""
    return _SessionKey.of(ctx.session)


class _SessionKey:
    """A session, weakly: a subscription a session never let go of is not what keeps it alive."""

    _keys: weakref.WeakKeyDictionary[object, _SessionKey] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, session: object) -> object:
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
    """``request``'s answer; its ``UpstreamError`` as the catalog's JSON-RPC error."""
    try:
        return await request
    except UpstreamError as exc:
        raise await _failed(ctx, connection, exc) from None


async def _failed(ctx: Ctx, connection: UpstreamConnection, exc: UpstreamError) -> MCPError:
    """The catalog's error for an upstream's failed request, classified by the rules a failed tool call's is."""
    snapshot = await acatalog_snapshot()
    upstream = connection.config.name
    facts = facts_from_exception(exc, upstream=upstream)
    entry = snapshot.entry(classify(snapshot, facts))
    inbox.note(upstream, "", facts.kind, facts.text, classified=entry.code not in UNCLASSIFIED_UPSTREAM_CODES)
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
    return await _rendered(ctx, failure, snapshot)


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

"""An upstream's resources, resource templates, prompts and completions: relayed over its connection, and named
so that ``/mcp`` can serve every upstream's beside the catalog's without a collision.

**Names at ``/mcp``.** A prompt is ``<prefix>__<name>``, as the upstream's tools are. A resource URI or URI template
is ``errcatalog-upstream://<upstream>/<its own URI>``: our scheme, the upstream's name (``/mcp/<upstream>``) as the
authority, and the upstream's URI, unchanged, as the path. It is reversible by cutting at the first ``/`` after the
authority, and a valid RFC 3986 URI whenever the upstream's is (its ``scheme:`` is a path segment, its ``//`` an
empty one, its query and fragment ours). The name is the authority rather than part of the scheme because a name may
hold ``_``, which a scheme may not; it is lower-case by rule, so a client that normalises the authority's case keeps
it. A template keeps its expressions where they were, so a client expands it as it would the upstream's.

**Raw URIs at ``/mcp``.** A tool's successful result passes unchanged, so a ``resource_link`` (or an embedded
resource) in it names the upstream's own URI. ``/mcp`` reads such a URI at the upstream whose result carried it to
that client (``remember_links``: a bounded memory per process, per client and URI) or, failing that (another
process, a link from elsewhere), at the one upstream whose listed resources or templates claim it; two claims are
refused as ambiguous, never guessed (``claimants``).

**Screening.** What an upstream lists of its resources, templates and prompts passes the screen its tools' metadata
does (``errcatalog.gateway.screen.screen_offering``): an item with a flag is withheld from the listings, a withheld
prompt is not served, and the log says which and why, never the text. Unlike tools' metadata it is not pinned for
staff to approve (SECURITY.md says why).

**Relaying.** Every request goes through ``UpstreamConnection.request`` (its session, breaker, limit and timeout;
its failures the ``UpstreamError`` a tool call's would be). Lists are read page by page up to ``MAX_PAGES``, as tool
lists are, and kept per upstream until it says they changed (``forget_listings``) or ``LISTING_SECONDS`` pass.
Subscriptions (``Subscriptions``) are held on the upstream session a client's requests go over: its own one where it
has one, so that the upstream's updates on it are that client's alone, else the shared one, where our subscribers
are counted per URI (subscribed upstream on the first, unsubscribed on the last) and each update reaches those
holding that URI of that upstream. What a session or listen stream of ours held when it ended is let go
(``Subscriptions.release``); what a session held is subscribed again when it is new (``renew``: the shared one
after a reconnection, a client's own when it opens again after it broke).
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.gateway.models import TOOL_SEPARATOR
from errcatalog.gateway.screen import screen_offering
from errcatalog.gateway.selectors import screen_limits
from errcatalog.vocabulary import ROOT_SERVER, is_server_name
from mcpserver.gateway.notices import SHARED
from mcpserver.gateway.results import without_protocol_meta

if TYPE_CHECKING:
    from mcpserver.gateway.connection import UpstreamConnection

logger = logging.getLogger("mcpserver.gateway")
# resources/subscribe is a 2025-11-25 method, which the SDK's client marks deprecated; sent only to such upstreams.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=__name__)

URI_SCHEME = "errcatalog-upstream"
_URI_PREFIX = URI_SCHEME + "://"
# A URI longer than this is refused before anything is looked up (the SDK caps a request's body, not a field).
MAX_URI_CHARS = 8192
# Pages of one listing: a bound against an upstream that never stops paginating (as for its tools).
MAX_PAGES = 100
# How long a listing is kept when the upstream says nothing (an upstream without list-changed notices).
LISTING_SECONDS = 30.0
KINDS = ("resources", "templates", "prompts")

# What each upstream lists, per kind (a tuple of the SDK's models), kept between requests.
_listings: BoundedCache[tuple[str, str], tuple[Any, ...]] = process_cache(
    "mcpserver.gateway.offerings.listings", scope="process", max_entries=4096, max_age=LISTING_SECONDS
)
# The names the screen withholds of each upstream's listing, per kind; and the withholdings the log has said.
_withheld: BoundedCache[tuple[str, str], frozenset[str]] = process_cache(
    "mcpserver.gateway.offerings.withheld", scope="process", max_entries=4096
)
_said: BoundedCache[tuple[Any, ...], bool] = process_cache(
    "mcpserver.gateway.offerings.said", scope="process", max_entries=4096, max_age=86400.0
)
# (client key, raw URI) -> the upstream whose tool result carried that URI to that client. A day is longer than a
# conversation that reads what a tool linked; the bound only guards memory.
_links: BoundedCache[tuple[str, str], str] = process_cache(
    "mcpserver.gateway.offerings.links", scope="process", max_entries=16384, max_age=86400.0
)


# --- Names ---------------------------------------------------------------------------------------------------------


def namespaced_uri(upstream: str, uri: str) -> str:
    """An upstream's resource URI (or URI template) as ``/mcp`` serves it."""
    return f"{_URI_PREFIX}{upstream}/{uri}"


def split_uri(uri: str) -> tuple[str, str] | None:
    """``(upstream, its own URI)`` of a namespaced URI; None for any other URI, or a malformed one of our scheme
    (``is_namespaced`` tells the two apart)."""
    if not is_namespaced(uri) or len(uri) > MAX_URI_CHARS:
        return None
    upstream, slash, raw = uri[len(_URI_PREFIX) :].partition("/")
    if not slash or not raw or upstream == ROOT_SERVER or not is_server_name(upstream):
        return None
    return upstream, raw


def is_namespaced(uri: str) -> bool:
    """Whether ``uri`` is of our upstream scheme (well-formed or not): such a URI is never another server's."""
    return uri[: len(_URI_PREFIX)].lower() == _URI_PREFIX


def prompt_name(prefix: str, name: str) -> str:
    return f"{prefix}{TOOL_SEPARATOR}{name}"


# --- Listings ------------------------------------------------------------------------------------------------------


async def listing(connection: UpstreamConnection, kind: str) -> tuple[Any, ...]:
    """Everything ``connection``'s upstream lists of ``kind`` (one of ``KINDS``): every page, up to ``MAX_PAGES``;
    nothing when it does not serve the feature. Raises an ``UpstreamError`` when the upstream fails."""
    key = (connection.config.name, kind)
    kept = _listings.get(key)
    if kept is not None:
        return kept

    async def send(client: Client) -> tuple[Any, ...]:
        capabilities = client.server_capabilities
        if (capabilities.prompts if kind == "prompts" else capabilities.resources) is None:
            return ()
        items: list[Any] = []
        cursor = None
        for _ in range(MAX_PAGES):
            if kind == "resources":
                page: Any = await client.list_resources(cursor=cursor)
                items += page.resources
            elif kind == "templates":
                page = await client.list_resource_templates(cursor=cursor)
                items += page.resource_templates
            else:
                page = await client.list_prompts(cursor=cursor)
                items += page.prompts
            cursor = page.next_cursor
            if cursor is None:
                break
        return tuple(items)

    listed = await connection.request(f"{kind}/list", send)
    found = _screened(connection.config.name, kind, listed)
    _listings.set(key, found)
    return found


async def withheld(connection: UpstreamConnection, kind: str, name: str) -> bool:
    """Whether the screen withholds ``kind``'s ``name`` of ``connection``'s upstream (as of its listing; an upstream
    that cannot be listed now withholds nothing)."""
    try:
        await listing(connection, kind)
    except Exception:  # its failure is the request's own to meet
        return False
    return name in (_withheld.get((connection.config.name, kind)) or frozenset())


def _screened(upstream: str, kind: str, listed: tuple[Any, ...]) -> tuple[Any, ...]:
    """What of ``listed`` passes the screen (``errcatalog.gateway.screen.screen_offering``); the rest is withheld and
    said once in the log, by name and flags, never its text."""
    limits = screen_limits()
    served, held = [], set()
    for item in listed:
        flags = screen_offering(item.model_dump(by_alias=True, mode="json", exclude_none=True), limits)
        if not flags:
            served.append(item)
            continue
        held.add(item.name)
        said = (upstream, kind, item.name, tuple(flags))
        if _said.get(said) is None:
            _said.set(said, True)
            logger.warning(
                "Upstream %s: %s %r is not served: the screen flags its %s",
                upstream,
                kind.removesuffix("s"),
                item.name[:128],
                ", ".join(f"{flag.field} ({flag.reason})" for flag in flags),
            )
    _withheld.set((upstream, kind), frozenset(held))
    return tuple(served)


def forget_listings(upstream: str, *kinds: str) -> None:
    """Read ``kinds`` of ``upstream`` afresh next time (it said they changed)."""
    for kind in kinds:
        _listings.pop((upstream, kind))


# --- Requests --------------------------------------------------------------------------------------------------------


# Each answer passes on as the upstream gave it, without the protocol's own metadata (the upstream's server info),
# which describes the upstream's answer, not ours (as for a tool's result).


# ``channel``: a client's own upstream session, where its requests go (``UpstreamConnection.own_channel``).


async def read(connection: UpstreamConnection, uri: str, *, channel: str = SHARED) -> types.ReadResourceResult:
    answer = await connection.request("resources/read", lambda client: client.read_resource(uri), channel=channel)
    return without_protocol_meta(answer)


async def get_prompt(
    connection: UpstreamConnection, name: str, arguments: dict[str, str] | None, *, channel: str = SHARED
) -> types.GetPromptResult:
    answer = await connection.request("prompts/get", lambda client: client.get_prompt(name, arguments), channel=channel)
    return without_protocol_meta(answer)


async def complete(
    connection: UpstreamConnection,
    ref: types.ResourceTemplateReference | types.PromptReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
    *,
    channel: str = SHARED,
) -> types.CompleteResult:
    arguments = dict(context.arguments or {}) if context is not None else None

    async def send(client: Client) -> types.CompleteResult:
        if client.server_capabilities.completions is None:  # nothing to offer: an empty completion, as ours
            return types.CompleteResult(completion=types.Completion(values=[]))
        return await client.complete(ref, {"name": argument.name, "value": argument.value}, arguments)

    return without_protocol_meta(await connection.request("completion/complete", send, channel=channel))


# --- Raw URIs from tool results ----------------------------------------------------------------------------------


def remember_links(upstream: str, client_key: str | None, result: object) -> None:
    """Note the URIs of the resource links and embedded resources a successful result of ``upstream`` carried to
    ``client_key``, so that ``/mcp`` reads them there (the result itself is not touched)."""
    content = getattr(result, "content", None)
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, types.ResourceLink):
            uri = block.uri
        elif isinstance(block, types.EmbeddedResource):
            uri = block.resource.uri
        else:
            continue
        if len(uri) <= MAX_URI_CHARS:
            _links.set((client_key or "", uri), upstream)


def linked_upstream(client_key: str | None, uri: str) -> str | None:
    """The upstream whose result last carried ``uri`` to ``client_key`` in this process, if one did."""
    return _links.get((client_key or "", uri))


async def claimants(connections: Iterable[UpstreamConnection], uri: str) -> list[UpstreamConnection]:
    """The upstreams among ``connections`` that list ``uri`` as a resource or have a template that matches it (an
    upstream that cannot be listed now claims nothing)."""
    found = []
    for connection in connections:
        try:
            resources = await listing(connection, "resources")
            templates = await listing(connection, "templates") if not any(r.uri == uri for r in resources) else ()
        except Exception as exc:  # its failure is its own; it just does not claim this URI
            logger.debug("Upstream %s could not be listed (%s)", connection.config.name, type(exc).__name__)
            continue
        if any(r.uri == uri for r in resources) or any(template_matches(t.uri_template, uri) for t in templates):
            found.append(connection)
    return found


# RFC 6570 expressions, by operator: what each may expand to (simple strings stop at a reserved delimiter).
_EXPANSIONS = {
    "": r"[^/?#&]*",
    "+": r"[^?#]*",
    "#": r"(?:#.*)?",
    ".": r"(?:\.[^/?#]*)*",
    "/": r"(?:/[^/?#]*)*",
    ";": r"(?:;[^/?#]*)*",
    "?": r"(?:\?[^#]*)?",
    "&": r"(?:&[^#]*)?",
}
_EXPRESSION = re.compile(r"\{([+#./;?&]?)[^{}]*\}")
_patterns: BoundedCache[str, re.Pattern[str]] = process_cache(
    "mcpserver.gateway.offerings.templates", scope="process", max_entries=1024
)


def template_matches(template: str, uri: str) -> bool:
    """Whether ``uri`` could be an expansion of the URI template ``template`` (RFC 6570, read loosely)."""
    pattern = _patterns.get(template)
    if pattern is None:
        parts, last = [], 0
        for match in _EXPRESSION.finditer(template):
            parts += [re.escape(template[last : match.start()]), _EXPANSIONS[match.group(1)]]
            last = match.end()
        parts.append(re.escape(template[last:]))
        pattern = re.compile("".join(parts))
        _patterns.set(template, pattern)
    return pattern.fullmatch(uri) is not None


# --- Subscriptions -----------------------------------------------------------------------------------------------


class Subscriptions:
    """This process's subscriptions to upstream resources (see the module docstring).

    A subscription is held upstream on a channel (``mcpserver.gateway.notices``): a client's own upstream session,
    whose updates are that client's alone, or the connection's shared session (a stdio upstream's shared child, our
    2026-07-28 clients' listen streams, and any 2026-07-28 upstream, whose supervisor's listen stream asks for
    them). Once per upstream, channel and URI while any holder of ours holds it: the first subscribes upstream, the
    last unsubscribes. A holder is ``(subscriber, the URI as the subscriber named it)``, so that each subscriber
    hears each update once under each URI it subscribed with; ``delivery`` (whatever the caller needs to tell it)
    is kept with it.
    """

    def __init__(self) -> None:
        self._holders: dict[tuple[str, str, str], dict[tuple[Hashable, str], object]] = {}
        self._lock = anyio.Lock()

    def held(self, upstream: str, uri: str) -> int:
        """Holders of ``uri`` of ``upstream`` on every channel."""
        return sum(len(h) for (name, _, held), h in self._holders.items() if name == upstream and held == uri)

    def deliveries(self, upstream: str, channel: str, uri: str) -> list[object]:
        """Where an update of ``uri`` that ``upstream`` sent on ``channel`` goes: one delivery per holder."""
        return list(self._holders.get((upstream, channel, uri), {}).values())

    async def subscribe(
        self, connection: UpstreamConnection, uri: str, holder: tuple[Hashable, str], delivery: object, *, channel: str
    ) -> None:
        """Hold ``uri`` for ``holder``; the first holder on ``channel`` subscribes upstream (a failure: nobody holds
        it)."""
        key = (connection.config.name, channel, uri)
        async with self._lock:
            holders = self._holders.get(key)
            if holders is None:
                await _relay_subscription(connection, uri, subscribe=True, channel=channel)
                holders = self._holders[key] = {}
            holders[holder] = delivery
            self._listened(connection)

    async def unsubscribe(
        self, connection: UpstreamConnection, uri: str, holder: tuple[Hashable, str], *, channel: str
    ) -> None:
        """Let go of ``uri`` for ``holder``; the last holder on ``channel`` unsubscribes upstream."""
        key = (connection.config.name, channel, uri)
        async with self._lock:
            holders = self._holders.get(key)
            if holders is None or holder not in holders:
                return
            del holders[holder]
            if holders:
                return
            del self._holders[key]
            self._listened(connection)
            await _let_go(connection, uri, channel)

    async def release(self, subscriber: Hashable, connections: Mapping[str, UpstreamConnection]) -> int:
        """Let go of everything ``subscriber`` holds (its session or stream ended without unsubscribing); what nobody
        holds any more is unsubscribed upstream on the shared session. On a client's own session nothing is sent: that
        session closes with ours, and its subscriptions with it. Returns how many were let go."""
        released = 0
        async with self._lock:
            for key, holders in list(self._holders.items()):
                mine = [holder for holder in holders if holder[0] == subscriber]
                for holder in mine:
                    del holders[holder]
                released += len(mine)
                if holders or not mine:
                    continue
                del self._holders[key]
                upstream, channel, uri = key
                connection = connections.get(upstream)
                if connection is None:
                    continue
                self._listened(connection)
                if channel == SHARED:
                    await _let_go(connection, uri, channel)
        return released

    async def renew(self, connection: UpstreamConnection, channel: str = SHARED) -> None:
        """``connection``'s session of ``channel`` is new: what its holders hold there is subscribed again (the old
        session's subscriptions ended with it). A URI the upstream refuses now is dropped with its holders."""
        name = connection.config.name
        async with self._lock:
            for key in [key for key in self._holders if key[0] == name and key[1] == channel]:
                try:
                    await _relay_subscription(connection, key[2], subscribe=True, channel=channel)
                except Exception as exc:
                    logger.info("Upstream %s: a subscription was not renewed (%s)", name, type(exc).__name__)
                    del self._holders[key]
            self._listened(connection)

    def _listened(self, connection: UpstreamConnection) -> None:
        """What a 2026-07-28 upstream's listen stream asks about: the URIs held on its shared channel."""
        name = connection.config.name
        connection.listen_to(frozenset(uri for (n, channel, uri) in self._holders if n == name and channel == SHARED))


async def _let_go(connection: UpstreamConnection, uri: str, channel: str) -> None:
    try:
        await _relay_subscription(connection, uri, subscribe=False, channel=channel)
    except Exception as exc:  # nobody of ours listens any more: an update that still comes reaches nobody
        logger.info("Upstream %s: unsubscribing failed (%s)", connection.config.name, type(exc).__name__)


async def _relay_subscription(connection: UpstreamConnection, uri: str, *, subscribe: bool, channel: str) -> None:
    async def send(client: Client) -> None:
        resources = client.server_capabilities.resources
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS or resources is None or not resources.subscribe:
            # A 2026-07-28 upstream is asked on the supervisor's listen stream (``UpstreamConnection.listen_to``);
            # one without subscriptions never tells. Either way nothing is sent here.
            return
        if subscribe:
            await client.subscribe_resource(uri)
        else:
            await client.unsubscribe_resource(uri)

    what = "resources/subscribe" if subscribe else "resources/unsubscribe"
    await connection.request(what, send, channel=channel, hold=1 if subscribe else -1)

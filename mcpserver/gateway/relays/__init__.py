"""The relays around every call the gateway forwards to an upstream, in one chain, in one place.

The way FastMCP's middleware and Django's work: each relay is ``async def relay(call, call_next)``, given the call
(``forwarded.ForwardedCall``, frozen) and the rest of the chain; it may pass on the call, or a copy with something
changed, answer in its place, or act on what comes back. ``CHAIN`` lists them outermost first; its last link is the
connection (``UpstreamConnection.forward``), where the call goes over the upstream's session with its progress and
log level (the transport's part of those relays). A relay is a module of this package and a line of ``CHAIN``:

1. ``url_elicitation``: an upstream's -32042 (URL elicitation required) passed on as the same protocol error to a
   2025-11-25 client that takes URL elicitations;
2. ``links``: the resources a result links to, remembered for the client (``/mcp`` reads them at that upstream);
3. ``log_messages``: where the upstream's log messages for the call go, at the client's level;
4. ``park_for_round_trips``: a 2026-07-28 client's call of a 2025-11-25 upstream that asks in mid-call waits, parked
   (``mcpserver.gateway.parking``), for the client's round trips.

What an upstream asks of the client or tells it during a call (elicitation, sampling, roots, log messages, progress)
comes back through the connection's callbacks, which find the call with ``forwarded.calling``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from django.conf import settings

from mcpserver.calls import ToolCall
from mcpserver.gateway.forwarded import CallNext, ForwardedCall, Relay, Result, Upstream
from mcpserver.gateway.relays import links, log_messages, park_for_round_trips, url_elicitation
from mcpserver.gateway.round_trip import RoundTrip, accepted_requests

CHAIN: tuple[Relay, ...] = (
    url_elicitation.relay,
    links.relay,
    log_messages.relay,
    park_for_round_trips.relay,
)


def forwarded_call(connection: Upstream, tool: str, arguments: dict[str, Any], origin: ToolCall) -> ForwardedCall:
    """The pipeline's call ``origin`` of ``connection``'s ``tool``, as the relays see it."""
    # A 2026-07-28 client that takes forms, URLs, sampling or roots answers an upstream's input requests in a round
    # trip of its own.
    accepts = (
        accepted_requests(origin.context.capabilities, forms=origin.can_elicit and settings.MCP["ELICITATION"])
        if origin.modern
        else frozenset()
    )
    return ForwardedCall(
        connection,
        tool,
        arguments,
        ask=origin.context.elicit,
        client=origin.context,
        session_id=origin.session_id,
        round_trip=RoundTrip(origin.request_state, origin.input_responses, accepts) if accepts else None,
        # The upstream reports progress only to a client that asked for it, on the request that asked.
        progress=origin.context.progress if origin.wants_progress else None,
        origin=origin,
    )


async def relayed(call: ForwardedCall) -> Result:
    """``call`` through ``CHAIN`` to its upstream."""
    return await _chained()(call)


_composed: tuple[tuple[Relay, ...], CallNext] | None = None


def _chained() -> CallNext:
    """``CHAIN`` as one function, composed again only when ``CHAIN`` is another tuple (a test adds a relay)."""
    global _composed
    composed = _composed
    if composed is None or composed[0] is not CHAIN:
        call_next: CallNext = _to_upstream
        for relay in reversed(CHAIN):
            call_next = _linked(relay, call_next)
        composed = _composed = (CHAIN, call_next)
    return composed[1]


def _linked(relay: Relay, call_next: CallNext) -> CallNext:
    def link(call: ForwardedCall) -> Awaitable[Result]:
        return relay(call, call_next)

    return link


def _to_upstream(call: ForwardedCall) -> Awaitable[Result]:
    return call.connection.forward(call)

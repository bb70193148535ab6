"""One call forwarded to an upstream, as every relay sees it, and how a request the upstream makes during the call
finds it.

``ForwardedCall`` is built once, when the pipeline calls an upstream's tool (``relays.forwarded_call``), and frozen:
which connection and tool, the arguments, and what the call's client offers (how to ask its user, what else it may
be asked, our 2025-11-25 session, the answers its round trip carries, where progress and log messages go). A relay
that passes on something else passes a copy (``dataclasses.replace``), as ``park_for_round_trips`` does for the call
it parks.

An upstream's request during a call (an elicitation, a sampling request, the roots) and a log message it sends belong
to one call, which each relay finds the same way (``calling``):

- a 2026-07-28 upstream asks in its answer to the call, and the SDK's driver hands the request to our callback in the
  task that forwards the call, which ``forwarding`` marks;
- a 2025-11-25 upstream sends it on its session, with nothing the SDK passes on that names the call: it belongs to the
  only call in flight on that session, and to none when there are several, or none.

A task started during a call that outlives it (the session a client's first call opens, ``client_sessions``) is
started ``outside_calls``, so that what reaches it later is not taken for that first call's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types

from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.calls import ToolCall
from mcpserver.gateway.elicitation import Ask, CallersClient
from mcpserver.gateway.log_relay import LogSink
from mcpserver.gateway.progress import Progress
from mcpserver.gateway.round_trip import RoundTrip

Result = types.CallToolResult | types.InputRequiredResult


class Upstream(Protocol):
    """The connection a call goes to (``connection.UpstreamConnection``), as relays see it."""

    config: UpstreamConfig
    protocol_version: str | None  # as of its last handshake; None before the first

    def forward(self, call: ForwardedCall) -> Awaitable[Result]:
        """The call, to the upstream: the chain's last link."""
        ...


@dataclass(frozen=True, eq=False, slots=True)
class ForwardedCall:
    """One call to an upstream's tool, built once and handed down the relays (``relays``). Compared by identity: two
    calls with the same arguments are two calls."""

    connection: Upstream
    tool: str  # the upstream's own name for it
    arguments: dict[str, Any]
    # How to ask the call's user (None: the call has nobody to ask), and what else its client may be asked.
    ask: Ask | None = None
    client: CallersClient | None = None
    # Our 2025-11-25 session's id: its calls go over an upstream session of its own (``client_sessions``).
    session_id: str | None = None
    # A 2026-07-28 client that takes input requests answers the upstream's in round trips of its own.
    round_trip: RoundTrip | None = None
    # Where the upstream's progress goes (the client asked for it on this request), and its log messages.
    progress: Progress | None = None
    log: LogSink | None = None
    # The pipeline's call this one forwards; None for a call made outside the pipeline (a check, a test).
    origin: ToolCall | None = None

    @property
    def upstream(self) -> str:
        return self.connection.config.name


# The call this task forwards (``forwarding``).
_CURRENT: ContextVar[ForwardedCall | None] = ContextVar("errcatalog_forwarded_call", default=None)


class forwarding:  # lower case: used as a function, ``with forwarding(call):``
    """Marks the task as forwarding ``call`` inside the block, for ``calling``. A class, not a generator: it is on
    every call's path."""

    __slots__ = ("_call", "_token")

    def __init__(self, call: ForwardedCall) -> None:
        self._call = call

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._call)

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


class outside_calls:  # lower case: used as a function, ``with outside_calls():``
    """A task started inside the block belongs to no call, whichever this task forwards (a task copies its
    starter's context)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _CURRENT.set(None)

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


def calling(in_flight: Sequence[ForwardedCall]) -> ForwardedCall | None:
    """The call a request of the upstream belongs to, given the calls in flight on the session it came on; None when
    that cannot be told (see the module's docstring)."""
    call = _CURRENT.get()
    if call is None and len(in_flight) == 1:
        call = in_flight[0]
    return call


# A relay of the chain (``relays``): given the call and the rest of the chain, it answers for the call.
CallNext = Callable[[ForwardedCall], Awaitable[Result]]
Relay = Callable[[ForwardedCall, CallNext], Awaitable[Result]]

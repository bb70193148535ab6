"""One tool call as the MCP server's parts see it: built by ``server``, served by ``pipeline``, asked about by
``elicitation``. Its own module so that those import it, not each other."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from errcatalog.vocabulary import ROOT_SERVER
from mcpserver.auth import ClientIdentity


@dataclass(slots=True)
class ToolCall:
    """One ``tools/call`` as the pipeline sees it, built by ``mcpserver.server`` from the SDK's request."""

    name: str
    arguments: dict[str, Any]
    client: ClientIdentity | None
    session_id: str | None
    protocol_version: str
    # The client declared form elicitation (per connection on 2025-11-25, per request on 2026-07-28).
    can_elicit: bool = False
    # 2025-11-25: sends elicitation/create on the session; None when there is no back channel.
    elicit_form: Callable[[str, dict[str, Any]], Awaitable[types.ElicitResult]] | None = None
    # 2026-07-28: the answers of an InputRequiredResult round trip and our (already unsealed) state.
    modern: bool = False
    input_responses: Mapping[str, Any] | None = None
    request_state: str | None = None
    context: Any = None  # the ToolContext handed to tools that ask for one
    # The client asked for progress notifications on this call (a ``progressToken`` in its ``_meta``).
    wants_progress: bool = False
    # 2026-07-28: the level the request opted in to log messages at (``_meta`` ``io.modelcontextprotocol/logLevel``);
    # None: no log messages (a 2025-11-25 session's level is its ``logging/setLevel``'s, ``gateway.log_relay``).
    log_level: str | None = None
    # The request's Accept-Language ranges, best first: the protocol itself carries no client locale.
    locales: tuple[str, ...] = ()
    # The server the request was sent to: ROOT_SERVER (``/mcp``) or an upstream's name (``/mcp/<upstream>``), whose
    # tools are then called by their unprefixed names.
    server: str = ROOT_SERVER
    # The upstream MCP server serving the called tool (the gateway), once the pipeline has found the tool.
    upstream: str = ""
    # Whether the called name is a tool this server serves (metrics label only served names).
    served: bool = False
    # The called tool's served name at ``/mcp`` (``prefix__tool`` for an upstream's), once the pipeline found it:
    # what outcomes and metrics record, whichever server's name for it was called.
    served_name: str = ""
    # Whether the call is traced (OpenTelemetry configured): only then has its outcome a span to note it on.
    traced: bool = False
    started: float = field(default_factory=time.perf_counter)


class RelayedProtocolError(Exception):
    """A JSON-RPC error a call answers its client with as the client's protocol defines it (an upstream's -32042 for
    a client that takes URL elicitations), in place of a failure rendered from the catalog: the pipeline records the
    call and raises ``error`` (sanctioned: ``mcpserver.jsonrpc_errors``)."""

    def __init__(self, error: Exception):
        super().__init__("relayed protocol error")
        self.error = error


# The call the running task serves, set by the pipeline around a gateway forwarder: how a tool that takes no
# ``context`` parameter (its arguments are the upstream's) reaches its call's context and input round trip.
current_tool_call: ContextVar[ToolCall | None] = ContextVar("current_tool_call", default=None)

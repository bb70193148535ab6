"""An upstream's requests for input, relayed to the user of the call they belong to: both protocol generations.

- **In mid-call** (``relay_elicitation``): a 2025-11-25 upstream's ``elicitation/create`` on its session, or a
  2026-07-28 upstream's input request that the SDK's driver hands to the elicitation callback, goes to the asker of
  the call it belongs to (``asking``: the forwarding task's own, found through a context variable for a 2026-07-28
  upstream; for a 2025-11-25 one, the only call in flight on the connection). Our client answers it on its
  2025-11-25 session (``ToolContext.elicit``).
- **Across calls** (``round_trip_call``): for a 2026-07-28 client that takes forms, a 2026-07-28 upstream's input
  requests come back as our own ``InputRequiredResult`` (``relayed``), whose state carries the upstream's through the
  client (sealed by the SDK on the way out); the client's next call brings the answers back (``RoundTrip``).

Only form elicitations are relayed (a URL one would send the user to an address the upstream chose); their messages
are cut and redacted. Anything else is declined, as without a client that can answer.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp.client import Client

from errcatalog.safety import redacted_for_people
from mcpserver.gateway.progress import Progress
from mcpserver.registry import ClientCannotAnswer, UserAnswer

# An elicitation's message as our client's user sees it: the upstream's text, cut and with credentials redacted.
ELICITATION_MESSAGE_MAX_CHARS = 1000
# A 2026-07-28 upstream's input requests relayed to our client: their keys (prefixed, so that they cannot meet our own
# elicitation's), and bounds on what we carry for the upstream through our client.
RELAY_PREFIX = "upstream:"
RELAY_STATE_VERSION = 1
RELAY_MAX_REQUESTS = 8
RELAY_MAX_STATE = 16384
_RELAY_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,64}")

# How a call asks our client's user (``ToolContext.elicit``): message and schema in, ``UserAnswer`` out; it raises
# ``ClientCannotAnswer`` when the client cannot take the request.
Ask = Callable[[str, Mapping[str, Any]], Awaitable[UserAnswer]]


class CallersClient(Protocol):
    """What a forwarded call's client may be asked besides a form (``mcpserver.server``'s tool context): each raises
    ``ClientCannotAnswer`` when the client did not declare it or cannot take a request on this call."""

    async def create_message(self, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        """``sampling/createMessage`` to the client, tied to the call (``sampling``)."""
        ...

    async def list_roots(self) -> types.ListRootsResult:
        """``roots/list`` to the client, tied to the call (``roots``)."""
        ...

    async def elicit_url(self, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        """A URL-mode ``elicitation/create`` to the client, tied to the call."""
        ...


@dataclass(eq=False)
class Asker:
    """One forwarded call's way to ask its client's user; ``ask`` is None when the call has none, ``client`` when
    nothing else may be asked of its client."""

    ask: Ask | None
    client: CallersClient | None = None


# The asker of the call this task forwards. A 2026-07-28 upstream asks for input in its answer to the call, and the
# SDK's driver hands that request to the elicitation callback in the calling task, so it finds its call here.
_ASKER: ContextVar[Asker | None] = ContextVar("upstream_asker", default=None)


@contextlib.contextmanager
def asking(ask: Ask | None, client: CallersClient | None = None) -> Iterator[Asker]:
    """The asker of the call forwarded inside the block, found by ``caller`` in this task."""
    asker = Asker(ask, client)
    token = _ASKER.set(asker)
    try:
        yield asker
    finally:
        _ASKER.reset(token)


def caller(in_flight: Sequence[Asker]) -> Asker | None:
    """The asker of the call an upstream's request belongs to, or None when that cannot be told.

    A 2026-07-28 upstream's request is found by its calling task. A 2025-11-25 upstream sends its request on the
    session, with nothing the SDK passes on that names the call: it belongs to the only call in flight on the
    connection (``in_flight``), and to none when there are several, or none.
    """
    asker = _ASKER.get()
    if asker is None and len(in_flight) == 1:
        asker = in_flight[0]
    return asker


async def relay_elicitation(
    params: types.ElicitRequestParams, in_flight: Sequence[Asker], secrets: Sequence[str]
) -> types.ElicitResult:
    """An upstream asks for input: relayed to the user of the call it belongs to when that call's client can answer,
    else declined.

    The call is found by ``caller``: a request that could belong to several is declined.
    """
    asker = caller(in_flight)
    if asker is None or asker.ask is None or not isinstance(params, types.ElicitRequestFormParams):
        return types.ElicitResult(action="decline")
    message = redacted_for_people(params.message, known=secrets, limit=ELICITATION_MESSAGE_MAX_CHARS)
    try:
        answer = await asker.ask(message, dict(params.requested_schema))
    except ClientCannotAnswer:
        return types.ElicitResult(action="decline")
    if answer.action == "accept":
        return types.ElicitResult(action="accept", content=answer.content)
    return types.ElicitResult(action="cancel" if answer.action == "cancel" else "decline")


@dataclass(frozen=True)
class RoundTrip:
    """What a 2026-07-28 call of ours carries back from an earlier round: its answers and our (unsealed) state."""

    request_state: str | None
    input_responses: Mapping[str, Any] | None

    def answers_for(self, upstream: str, tool: str) -> tuple[str | None, types.InputResponses | None]:
        """The upstream's state and the answers to its input requests, when this call answers a request relayed
        from ``upstream``'s ``tool`` (``relayed``); else (None, None): a first round."""
        try:
            state = json.loads(self.request_state) if self.request_state else None
        except ValueError:
            return None, None
        relay = state.get("relay") if isinstance(state, dict) and state.get("v") == RELAY_STATE_VERSION else None
        if not isinstance(relay, dict) or relay.get("upstream") != upstream or relay.get("tool") != tool:
            return None, None
        answers: dict[str, Any] = {}
        for key in relay.get("keys") or ():
            raw = (self.input_responses or {}).get(f"{RELAY_PREFIX}{key}") if isinstance(key, str) else None
            if raw is None:
                continue
            if not isinstance(raw, Mapping):
                raw = raw.model_dump(by_alias=True, exclude_none=True)
            try:
                answers[key] = types.ElicitResult.model_validate(raw, by_name=False)
            except ValueError:
                continue
        upstream_state = relay.get("state")
        return (upstream_state if isinstance(upstream_state, str) else None), (answers or None)


async def round_trip_call(
    client: Client,
    upstream: str,
    tool: str,
    arguments: dict[str, Any],
    round_trip: RoundTrip,
    secrets: Sequence[str],
    *,
    progress: Progress | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """One round of a 2026-07-28 call whose input requests our client answers (``UpstreamConnection.call``);
    ``progress`` relays the upstream's progress on it (``mcpserver.gateway.progress``)."""
    upstream_state, responses = round_trip.answers_for(upstream, tool)
    result = await client.session.call_tool(
        tool,
        arguments,
        progress_callback=progress,
        input_responses=responses,
        request_state=upstream_state,
        allow_input_required=True,
    )
    if not isinstance(result, types.InputRequiredResult):
        return result  # a claimed result shape raises (allow_claimed is off)
    ours = relayed(upstream, tool, result, secrets)
    if ours is None:  # not form elicitations only: the SDK's driver answers them (a decline) as without
        return await client.call_tool(tool, arguments, progress_callback=progress)
    return ours


def relayed(
    upstream: str, tool: str, result: types.InputRequiredResult, secrets: Sequence[str]
) -> types.InputRequiredResult | None:
    """The upstream's input requests as ours: form elicitations only, their messages cut and redacted, the
    upstream's state kept in ours (which the SDK seals before it reaches the client)."""
    requests = result.input_requests or {}
    state = result.request_state
    if not requests or len(requests) > RELAY_MAX_REQUESTS or (state is not None and len(state) > RELAY_MAX_STATE):
        return None
    ours: dict[str, types.CreateMessageRequest | types.ListRootsRequest | types.ElicitRequest] = {}
    for key, request in requests.items():
        params = getattr(request, "params", None)
        if not isinstance(params, types.ElicitRequestFormParams) or not _RELAY_KEY.fullmatch(key):
            return None
        message = redacted_for_people(params.message, known=secrets, limit=ELICITATION_MESSAGE_MAX_CHARS)
        ours[RELAY_PREFIX + key] = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=params.requested_schema)
        )
    relay = {"upstream": upstream, "tool": tool, "state": state, "keys": sorted(requests)}
    return types.InputRequiredResult(
        input_requests=ours, request_state=json.dumps({"v": RELAY_STATE_VERSION, "relay": relay})
    )

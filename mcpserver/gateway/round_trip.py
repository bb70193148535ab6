"""A 2026-07-28 upstream's input requests, answered by a 2026-07-28 client in a round trip of our own.

For a 2026-07-28 client that declared what the upstream asks for (forms, sampling, roots: ``RoundTrip.accepts``), the
upstream's ``InputRequiredResult`` comes back as ours (``relayed``), whose state carries the upstream's through the
client (sealed by the SDK on the way out); the client's next call brings the answers back (``RoundTrip``), and they go
to the upstream with its state (``round_trip_call``). Each request is relayed as its own module would relay it in
mid-call: a form's message cut and redacted (``elicitation``), a sampling request named, cut and redacted
(``sampling``); the answers go back as the client gave them (roots cut to ``roots.MAX_ROOTS``). A result with any
request the client cannot take is not relayed: the SDK's driver answers it through the connection's callbacks, which
decline or refuse as without a client that can answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.client import Client

from errcatalog.safety import redacted_for_people
from mcpserver.gateway.elicitation import ELICITATION_MESSAGE_MAX_CHARS, checked_url_elicitation
from mcpserver.gateway.progress import Progress
from mcpserver.gateway.roots import MAX_ROOTS
from mcpserver.gateway.sampling import Refused, bounded_request

# The methods of the input requests a client may answer in a round trip, as the client's capabilities name them.
ELICIT = "elicitation/create"
ELICIT_URL = "elicitation/create:url"  # a URL-mode one, which clients declare apart from forms
SAMPLE = "sampling/createMessage"
LIST_ROOTS = "roots/list"
# Their keys in our result (prefixed, so that they cannot meet our own elicitation's), and bounds on what we carry for
# the upstream through our client.
RELAY_PREFIX = "upstream:"
RELAY_STATE_VERSION = 2
RELAY_MAX_REQUESTS = 8
RELAY_MAX_STATE = 16384
_RELAY_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
# A client's answer to a relayed request.
Answer = types.ElicitResult | types.CreateMessageResult | types.ListRootsResult
_ANSWER_TYPES: Mapping[str, type[Answer]] = {
    ELICIT: types.ElicitResult,
    SAMPLE: types.CreateMessageResult,
    LIST_ROOTS: types.ListRootsResult,
}


def accepted_requests(capabilities: types.ClientCapabilities | None, *, forms: bool) -> frozenset[str]:
    """What a 2026-07-28 client can answer in a round trip: form elicitation (``forms``: declared, and elicitation
    on), URL elicitation, sampling and roots as it declared them."""
    accepts = {ELICIT} if forms else set()
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is not None and elicitation.url is not None:
        accepts.add(ELICIT_URL)
    if capabilities is not None and capabilities.sampling is not None:
        accepts.add(SAMPLE)
    if capabilities is not None and capabilities.roots is not None:
        accepts.add(LIST_ROOTS)
    return frozenset(accepts)


@dataclass(frozen=True)
class RoundTrip:
    """What a 2026-07-28 call of ours carries back from an earlier round (its answers and our unsealed state), and
    what its client can answer."""

    request_state: str | None
    input_responses: Mapping[str, Any] | None
    accepts: frozenset[str] = field(default=frozenset({ELICIT}))

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
        keys = relay.get("keys")
        answers: dict[str, Any] = {}
        for key, method in keys.items() if isinstance(keys, dict) else ():
            raw = (self.input_responses or {}).get(f"{RELAY_PREFIX}{key}") if isinstance(key, str) else None
            answer_type = _ANSWER_TYPES.get(method) if isinstance(method, str) else None
            answer = answer_of(raw, answer_type) if answer_type is not None else None
            if answer is not None:
                answers[key] = answer
        upstream_state = relay.get("state")
        return (upstream_state if isinstance(upstream_state, str) else None), (answers or None)


def answer_of(raw: Any, answer_type: type[Answer]) -> Answer | None:
    """A client's answer to one relayed request, as the upstream gets it (roots cut to ``MAX_ROOTS``); None when the
    client gave none, or not one of that type."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raw = raw.model_dump(by_alias=True, exclude_none=True)
    try:
        answer = answer_type.model_validate(raw, by_name=False)
    except ValueError:
        return None
    if isinstance(answer, types.ListRootsResult):
        del answer.roots[MAX_ROOTS:]  # a fresh model of ours
    return answer


async def round_trip_call(
    client: Client,
    upstream: str,
    tool: str,
    arguments: dict[str, Any],
    round_trip: RoundTrip,
    secrets: Sequence[str],
    *,
    progress: Progress | None = None,
    meta: dict[str, Any] | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """One round of a 2026-07-28 call whose input requests our client answers (``UpstreamConnection.call``);
    ``progress`` relays the upstream's progress on it (``mcpserver.gateway.progress``), ``meta`` asks the upstream for
    log messages at the client's level (``log_relay``)."""
    upstream_state, responses = round_trip.answers_for(upstream, tool)
    result = await client.session.call_tool(
        tool,
        arguments,
        progress_callback=progress,
        input_responses=responses,
        request_state=upstream_state,
        meta=meta,  # type: ignore[arg-type]
        allow_input_required=True,
    )
    if not isinstance(result, types.InputRequiredResult):
        return result  # a claimed result shape raises (allow_claimed is off)
    ours = relayed(upstream, tool, result, secrets, accepts=round_trip.accepts)
    if ours is None:  # a request the client cannot take: the SDK's driver answers them (declines) as without
        return await client.call_tool(tool, arguments, progress_callback=progress, meta=meta)  # type: ignore[arg-type]
    return ours


def relayed(
    upstream: str,
    tool: str,
    result: types.InputRequiredResult,
    secrets: Sequence[str],
    *,
    accepts: Collection[str] = frozenset({ELICIT}),
) -> types.InputRequiredResult | None:
    """The upstream's input requests as ours, when the client ``accepts`` each of them (form elicitations, sampling,
    roots), bounded as in mid-call; the upstream's state kept in ours (which the SDK seals before it reaches the
    client)."""
    requests = result.input_requests or {}
    state = result.request_state
    if not requests or len(requests) > RELAY_MAX_REQUESTS or (state is not None and len(state) > RELAY_MAX_STATE):
        return None
    ours: dict[str, types.CreateMessageRequest | types.ListRootsRequest | types.ElicitRequest] = {}
    for key, request in requests.items():
        kind = _kind(request)
        ours_request = _relayed_request(request, upstream, secrets) if kind in accepts else None
        if ours_request is None or not _RELAY_KEY.fullmatch(key):
            return None
        ours[RELAY_PREFIX + key] = ours_request
    relay = {"upstream": upstream, "tool": tool, "state": state, "keys": {k: r.method for k, r in requests.items()}}
    return types.InputRequiredResult(
        input_requests=ours, request_state=json.dumps({"v": RELAY_STATE_VERSION, "relay": relay})
    )


def _kind(request: types.InputRequest) -> str:
    if isinstance(request, types.ElicitRequest) and isinstance(request.params, types.ElicitRequestURLParams):
        return ELICIT_URL
    return request.method


def _relayed_request(
    request: types.InputRequest, upstream: str, secrets: Sequence[str]
) -> types.CreateMessageRequest | types.ListRootsRequest | types.ElicitRequest | None:
    if isinstance(request, types.ElicitRequest):
        params = request.params
        if isinstance(params, types.ElicitRequestURLParams):
            url_params = checked_url_elicitation(params, secrets)
            return types.ElicitRequest(params=url_params) if url_params is not None else None
        message = redacted_for_people(params.message, known=secrets, limit=ELICITATION_MESSAGE_MAX_CHARS)
        return types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=params.requested_schema)
        )
    if isinstance(request, types.CreateMessageRequest):
        try:
            return types.CreateMessageRequest(params=bounded_request(request.params, upstream, secrets))
        except Refused:
            return None
    return types.ListRootsRequest()

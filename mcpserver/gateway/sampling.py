"""An upstream's ``sampling/createMessage``, relayed to the client of the call it belongs to.

The gateway declares sampling to an upstream whose ``relay_sampling`` is on (``UpstreamConnection._open``). When the
upstream asks during a call (found as its elicitations are: ``forwarded.calling``), the request goes to that call's
client if the client declared sampling: in mid-call on a 2025-11-25 session (the tool context's ``create_message``),
or in a 2026-07-28 round trip (``elicitation.relayed`` carries it as our own input request). The client's answer,
the model's text, goes back to the upstream unchanged.

What the upstream sends is the upstream's text, and it is meant for a model: the spec puts the client's user between
the two (the client shows the request for approval, and may change or refuse it). So it is relayed, bounded and with
credentials redacted, and the request names the upstream that asks, in the system prompt every approval screen
shows and in ``_meta`` (``UPSTREAM_META_KEY``), since the client sees only the gateway as its server. What the
request could reach beyond the call is dropped: ``includeContext`` (the context of "this server" is every upstream's,
to the client) and ``metadata`` (handed on to the model's provider). Tools in sampling are not declared to upstreams,
and a request with them is refused.

Without a client that can answer, the upstream gets the error a client without sampling gives (``METHOD_NOT_FOUND``);
a refusal of the client's is passed on with its code.
"""

from __future__ import annotations

from collections.abc import Sequence

import mcp_types as types
from mcp.shared.exceptions import MCPError

from errcatalog.safety import redacted_for_people
from mcpserver.gateway.elicitation import CallersClient
from mcpserver.registry import ClientCannotAnswer

# Names the asking upstream in the relayed request's ``_meta``, for clients that show or check it.
UPSTREAM_META_KEY = "dev.errcatalog/upstream"
# Bounds on what an upstream may put in front of the client's user and model, per request: enough for a real
# conversation to summarise, not for a flood the user cannot read before approving.
MAX_MESSAGES = 50
MESSAGE_TEXT_MAX_CHARS = 20_000
SYSTEM_PROMPT_MAX_CHARS = 4_000
TOTAL_TEXT_MAX_CHARS = 100_000
# An image or audio block's base64 data, and all of a request's together: 2 MB of media.
MEDIA_MAX_CHARS = 2_800_000
MAX_STOP_SEQUENCES = 8
STOP_SEQUENCE_MAX_CHARS = 100
MAX_MODEL_HINTS = 8
MODEL_HINT_MAX_CHARS = 100
# The code the spec gives a user's refusal of a sampling request.
USER_REJECTED = -1
# A client's own error message is cut before it goes to the upstream.
CLIENT_MESSAGE_MAX_CHARS = 200


class Refused(Exception):
    """A sampling request the gateway does not relay (too big, or with tools it never declared)."""


def naming_line(upstream: str) -> str:
    """The first line of every relayed request's system prompt: which server behind the gateway asks."""
    return f'The MCP server "{upstream}" (behind the errcatalog gateway) asks for this completion.'


def bounded_request(
    params: types.CreateMessageRequestParams, upstream: str, secrets: Sequence[str]
) -> types.CreateMessageRequestParams:
    """The upstream's request as the client gets it: named, cut and redacted; ``Refused`` when it cannot be relayed.

    The order and roles of the messages, ``maxTokens``, ``temperature`` and the model preferences' weights are the
    upstream's; its texts are redacted and cut, its media bounded."""
    if params.tools or params.tool_choice:
        raise Refused("tools in sampling are not declared to upstreams")
    if not params.messages or len(params.messages) > MAX_MESSAGES:
        raise Refused("no messages, or too many")
    budget = {"text": TOTAL_TEXT_MAX_CHARS, "media": MEDIA_MAX_CHARS}
    messages = [
        types.SamplingMessage(role=message.role, content=_bounded_content(message.content, secrets, budget))
        for message in params.messages
    ]
    prompt = naming_line(upstream)
    if params.system_prompt:
        prompt += "\n\n" + redacted_for_people(params.system_prompt, known=secrets, limit=SYSTEM_PROMPT_MAX_CHARS)
    stops = params.stop_sequences
    if stops is not None:
        stops = [redacted_for_people(s, known=secrets, limit=STOP_SEQUENCE_MAX_CHARS) for s in stops]
        stops = stops[:MAX_STOP_SEQUENCES]
    meta: types.RequestParamsMeta = {}
    meta[UPSTREAM_META_KEY] = upstream  # type: ignore[literal-required]  # an open map (``extra_items``)
    return types.CreateMessageRequestParams(
        messages=messages,
        model_preferences=_bounded_preferences(params.model_preferences),
        system_prompt=prompt,
        temperature=params.temperature,
        max_tokens=params.max_tokens,
        stop_sequences=stops,
        _meta=meta,
    )


def _bounded_content(
    content: types.SamplingMessageContentBlock | list[types.SamplingMessageContentBlock],
    secrets: Sequence[str],
    budget: dict[str, int],
) -> types.SamplingMessageContentBlock | list[types.SamplingMessageContentBlock]:
    if isinstance(content, list):
        return [_bounded_block(block, secrets, budget) for block in content]
    return _bounded_block(content, secrets, budget)


def _bounded_block(
    block: types.SamplingMessageContentBlock, secrets: Sequence[str], budget: dict[str, int]
) -> types.SamplingMessageContentBlock:
    if isinstance(block, types.TextContent):
        text = redacted_for_people(block.text, known=secrets, limit=MESSAGE_TEXT_MAX_CHARS)
        budget["text"] -= len(text)
        if budget["text"] < 0:
            raise Refused("too much text")
        return types.TextContent(type="text", text=text)
    if isinstance(block, types.ImageContent | types.AudioContent):
        budget["media"] -= len(block.data)
        if budget["media"] < 0:
            raise Refused("too much media")
        return block.model_copy(update={"meta": None, "annotations": None})
    raise Refused("tool use in sampling is not declared to upstreams")


def _bounded_preferences(preferences: types.ModelPreferences | None) -> types.ModelPreferences | None:
    if preferences is None:
        return None
    hints = [
        types.ModelHint(name=hint.name[:MODEL_HINT_MAX_CHARS] if hint.name else None)
        for hint in (preferences.hints or [])[:MAX_MODEL_HINTS]
    ]
    return types.ModelPreferences(
        hints=hints or None,
        cost_priority=preferences.cost_priority,
        speed_priority=preferences.speed_priority,
        intelligence_priority=preferences.intelligence_priority,
    )


async def relay_sampling(
    params: types.CreateMessageRequestParams, client: CallersClient | None, upstream: str, secrets: Sequence[str]
) -> types.CreateMessageResult | types.ErrorData:
    """An upstream asks for a completion during the call whose ``client`` this is (``forwarded.calling`` found it;
    None: no call it can be told to belong to): relayed to that client when it can answer (its answer back
    unchanged), else the error a client without sampling gives."""
    if client is None:
        return unsupported()
    try:
        request = bounded_request(params, upstream, secrets)
    except Refused:
        return types.ErrorData(code=types.INVALID_PARAMS, message="Sampling request not relayed")
    try:
        return await client.create_message(request)
    except ClientCannotAnswer:
        return unsupported()
    except MCPError as exc:  # the client's own refusal (its user rejected the request: -1)
        return types.ErrorData(code=exc.code, message=exc.message[:CLIENT_MESSAGE_MAX_CHARS])


def unsupported() -> types.ErrorData:
    """What the upstream hears when the call's client cannot take a sampling request."""
    return types.ErrorData(code=types.METHOD_NOT_FOUND, message="Sampling not supported")

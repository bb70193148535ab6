"""Asking the user for missing input with a real MCP elicitation, on both protocol generations.

2025-11-25: ``elicitation/create`` goes to the client on the call's own SSE stream and the answer comes back
on the session. 2026-07-28 has no back channel: the call answers with an ``InputRequiredResult`` carrying the
form, and the client calls again with the answer and our ``requestState`` (sealed by the SDK's
``RequestStateBoundary`` with a key every process shares, see ``mcpserver.server``).

Only plain, non-secret fields are asked for in form mode (the spec forbids forms for secrets): a missing
``format: password`` or ``writeOnly`` property, one whose name says it holds a secret (``api_key``, ``password``,
``errcatalog.vocabulary.is_secret_name``), or one that is not a string, number, integer or boolean, means no
elicitation at all, and the caller gets the catalog's question instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from errcatalog.render import ParameterFault
from errcatalog.vocabulary import is_secret_name
from mcpserver.calls import ToolCall
from mcpserver.registry import ToolSpec

logger = logging.getLogger("mcpserver.elicitation")

# The key of our one input request in an InputRequiredResult, and the state we expect back with its answer.
INPUT_KEY = "errcatalog_missing_input"
STATE_VERSION = 1
# The state's key for the answers our elicitation added, when the tool then asks for more (``carrying``).
CARRY_KEY = "carry"
# A person answers a 2025 elicitation while the call waits; after this long it counts as dismissed.
ANSWER_TIMEOUT_SECONDS = 600
_STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_COPIED_KEYWORDS = {
    "string": ("minLength", "maxLength"),
    "number": ("minimum", "maximum"),
    "integer": ("minimum", "maximum"),
    "boolean": (),
}


@dataclass(frozen=True, slots=True)
class ElicitAnswer:
    action: str  # "accept", "decline" or "cancel"
    content: dict[str, Any] = field(default_factory=dict)


def requested_schema(spec: ToolSpec, missing: tuple[ParameterFault, ...]) -> dict[str, Any] | None:
    """The form for the missing parameters, built from the tool's schema; None when one cannot be asked for."""
    properties: Mapping[str, Any] = spec.input_schema.get("properties", {})
    form: dict[str, Any] = {}
    for fault in missing:
        prop = properties.get(fault.name, {})
        kind = prop.get("type")
        secret = prop.get("writeOnly") or prop.get("format") == "password" or is_secret_name(fault.name)
        if secret or kind not in _COPIED_KEYWORDS:
            return None
        field_schema: dict[str, Any] = {"type": kind}
        if prop.get("title"):
            field_schema["title"] = str(prop["title"])
        if fault.description or prop.get("description"):
            field_schema["description"] = fault.description or str(prop["description"])
        if kind == "string" and prop.get("format") in _STRING_FORMATS:
            field_schema["format"] = prop["format"]
        if kind == "string" and isinstance(prop.get("enum"), list):
            field_schema["enum"] = [str(v) for v in prop["enum"]]
        for keyword in _COPIED_KEYWORDS[kind]:
            if keyword in prop:
                field_schema[keyword] = prop[keyword]
        form[fault.name] = field_schema
    return {"type": "object", "properties": form, "required": [fault.name for fault in missing]}


async def ask(
    spec: ToolSpec, call: ToolCall, missing: tuple[ParameterFault, ...], message: str
) -> ElicitAnswer | types.InputRequiredResult | None:
    """Ask for ``missing``; None when it cannot be asked (the caller then sends the question instead)."""
    schema = requested_schema(spec, missing)
    if schema is None:
        return None
    names = set(schema["properties"])
    if call.modern:
        answer = _answer_from_round_trip(call)
        if answer is None:
            return types.InputRequiredResult(
                input_requests={
                    INPUT_KEY: types.ElicitRequest(
                        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
                    )
                },
                request_state=json.dumps({"v": STATE_VERSION, "ask": sorted(names)}),
            )
    else:
        assert call.elicit_form is not None
        try:
            with anyio.fail_after(ANSWER_TIMEOUT_SECONDS):
                result = await call.elicit_form(message, schema)
        except MCPError as exc:
            logger.warning("Elicitation for %s failed on the client side (JSON-RPC %s)", spec.name, exc.code)
            return None
        except TimeoutError:
            return ElicitAnswer("cancel")
        answer = ElicitAnswer(result.action, dict(result.content or {}))
    # Only the fields that were asked for are taken; the tool's schema validates them next.
    return ElicitAnswer(answer.action, {k: v for k, v in answer.content.items() if k in names})


def carrying(result: types.InputRequiredResult, values: Mapping[str, Any]) -> types.InputRequiredResult:
    """``result`` (a tool's own input request, an upstream's) with ``values``, the answers our elicitation added to
    the call's arguments, kept in its state: the client's next call sends its first arguments again, without them."""
    state = json.dumps({"v": STATE_VERSION, CARRY_KEY: dict(values), "state": result.request_state})
    return result.model_copy(update={"request_state": state})


def carried_arguments(call: ToolCall) -> dict[str, Any]:
    """The answers ``carrying`` kept for this call, if its state holds them; the call's state becomes the tool's
    own again. The SDK seals the state, so these are our own elicitation's answers."""
    try:
        state = json.loads(call.request_state) if call.request_state else None
    except ValueError:
        return {}
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION or not isinstance(state.get(CARRY_KEY), dict):
        return {}
    inner = state.get("state")
    call.request_state = inner if isinstance(inner, str) else None
    return dict(state[CARRY_KEY])


def _answer_from_round_trip(call: ToolCall) -> ElicitAnswer | None:
    """The elicitation answer carried by a 2026-07-28 retry, if this call is the retry of our request."""
    if not call.request_state or not call.input_responses:
        return None
    try:
        state = json.loads(call.request_state)
    except ValueError:
        return None
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
        return None
    response = call.input_responses.get(INPUT_KEY)
    if response is None:
        return None
    if not isinstance(response, Mapping):
        response = response.model_dump(by_alias=True, exclude_none=True)
    try:
        result = types.ElicitResult.model_validate(response, by_name=False)
    except ValueError:
        return None
    return ElicitAnswer(result.action, dict(result.content or {}))

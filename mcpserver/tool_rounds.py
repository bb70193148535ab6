"""A tool's own requests to its client (``ToolContext.sample``, ``ToolContext.elicit``) on 2026-07-28: input round
trips.

2026-07-28 has no back channel: a server asks its client for input in its answer to the call. When a running tool
asks and no answer is at hand, ``ToolRounds.answer`` raises ``InputNeeded`` out of the tool, and the pipeline
answers the call with its ``InputRequiredResult``: the one request, and our state (sealed by the SDK's
``RequestStateBoundary`` on its way out, so the client can neither read nor change it). The client answers and calls
again with the same arguments, its answer and the state. The tool then runs again from its start: each request it
makes is answered in turn, from the state (the answers of earlier rounds) or from the client's new answer, so it goes
on past the point where it asked last time, until it finishes or asks something new.

This is the model of the SDK's own resolvers (``mcp.server.mcpserver.resolve``): an answer stands only for the exact
request it answered (its digest), so a tool that asks differently this time (another prompt, another form) is asked
anew; and a tool runs once per round before its last request, so its side effects belong after its requests.
Bounds: ``MAX_REQUESTS`` requests per call and ``MAX_STATE_CHARS`` of answers carried; past them the tool gets
``ClientCannotAnswer``, as a client without the capability would give it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from mcpserver.registry import ClientCannotAnswer

# The key of a tool's request in our InputRequiredResult (one request per round), and of our state in its
# requestState (beside the keys of ``mcpserver.elicitation``'s own state, which can carry it: ``carrying``).
REQUEST_KEY = "errcatalog_tool_request"
STATE_KEY = "tool_rounds"
STATE_VERSION = 1
# A tool asks its client at most this often in one call, and carries at most this much of the answers it got.
MAX_REQUESTS = 16
MAX_STATE_CHARS = 65536


class InputNeeded(Exception):
    """A tool asked its 2026-07-28 client for input that no round has answered yet: the call answers ``result``.

    Raised through the tool's own code; a tool that catches every ``Exception`` around ``sample`` or ``elicit``
    must let this one through."""

    def __init__(self, result: types.InputRequiredResult):
        super().__init__("input required")
        self.result = result


def _digest(request: types.InputRequest) -> str:
    wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    return hashlib.sha256(json.dumps(wire, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass
class ToolRounds:
    """The answers one 2026-07-28 call carries for its tool's requests, given out in the order the tool asks."""

    # (request digest, answer in wire form) of the rounds so far, in the order the tool asked.
    answered: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # The digest of the request the client was shown last round, and its answer in this call (if any).
    asked: str | None = None
    response: Any = None
    position: int = 0

    @classmethod
    def of(cls, request_state: str | None, input_responses: Mapping[str, Any] | None) -> ToolRounds:
        """The rounds a call carries: its (unsealed) state and its answers; empty for a first call, or for state
        that is not ours (the SDK has checked the seal, so that is only another round trip's state)."""
        try:
            state = json.loads(request_state) if request_state else None
        except ValueError:
            state = None
        ours = state.get(STATE_KEY) if isinstance(state, dict) else None
        if not isinstance(ours, dict) or ours.get("v") != STATE_VERSION:
            return cls()
        answered = [
            (entry[0], entry[1])
            for entry in ours.get("answered") or ()
            if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], dict)
        ]
        asked = ours.get("asked") if isinstance(ours.get("asked"), str) else None
        return cls(answered, asked, (input_responses or {}).get(REQUEST_KEY))

    def answer[R: types.Result](self, request: types.InputRequest, result_type: type[R]) -> R:
        """The client's answer to ``request``, the tool's next request in this run; raises ``InputNeeded`` when no
        round has answered it yet."""
        digest = _digest(request)
        position = self.position
        self.position += 1
        if position < len(self.answered) and self.answered[position][0] == digest:
            return result_type.model_validate(self.answered[position][1], by_name=False)
        # The tool asks something else than last time from here on: later answers no longer apply.
        del self.answered[position:]
        if self.response is not None and self.asked == digest:
            raw, self.response = self.response, None
            if not isinstance(raw, Mapping):
                raw = raw.model_dump(by_alias=True, mode="json", exclude_none=True)
            try:
                answer = result_type.model_validate(raw, by_name=False)
            except ValueError:
                answer = None  # not an answer to this request: asked again
            if answer is not None:
                self.answered.append((digest, answer.model_dump(by_alias=True, mode="json", exclude_none=True)))
                return answer
        if position >= MAX_REQUESTS:
            raise ClientCannotAnswer("the tool asked its client more often than one call may")
        state = json.dumps(
            {STATE_KEY: {"v": STATE_VERSION, "answered": [list(entry) for entry in self.answered], "asked": digest}},
            separators=(",", ":"),
        )
        if len(state) > MAX_STATE_CHARS:
            raise ClientCannotAnswer("the answers of this call's earlier rounds are too large to carry")
        raise InputNeeded(types.InputRequiredResult(input_requests={REQUEST_KEY: request}, request_state=state))

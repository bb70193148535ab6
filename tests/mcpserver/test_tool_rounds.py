"""``mcpserver.tool_rounds``: a tool's requests to a 2026-07-28 client, answered across rounds in the order it asks.

Each round here is what the pipeline does with one call: the tool runs, and either finishes or raises ``InputNeeded``
with the result the call answers; the next round carries the client's answer and that result's state (which the SDK
seals and unseals on the way: ``tests/conformance`` shows it served)."""

from __future__ import annotations

import mcp_types as types
import pytest

from mcpserver.registry import ClientCannotAnswer
from mcpserver.tool_rounds import MAX_REQUESTS, MAX_STATE_CHARS, REQUEST_KEY, InputNeeded, ToolRounds


def _form(message: str) -> types.ElicitRequest:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def _sampling(prompt: str) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=10))


def _reply(text: str) -> dict:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}


def _run(tool, state: str | None, answer: dict | None):
    """One round: the tool's return value, or the InputRequiredResult the call answers."""
    rounds = ToolRounds.of(state, {REQUEST_KEY: answer} if answer is not None else None)
    try:
        return tool(rounds)
    except InputNeeded as needed:
        return needed.result


def test_a_tool_that_asks_twice_goes_on_with_each_answer_and_is_asked_nothing_twice():
    ran = []

    def tool(rounds: ToolRounds) -> str:
        ran.append(1)
        name = rounds.answer(_form("Your name?"), types.ElicitResult).content["name"]
        reply = rounds.answer(_sampling(f"Greet {name}"), types.CreateMessageResult)
        return reply.content.text

    first = _run(tool, None, None)
    assert isinstance(first, types.InputRequiredResult)
    assert first.input_requests[REQUEST_KEY].params.message == "Your name?"
    second = _run(tool, first.request_state, {"action": "accept", "content": {"name": "Ada"}})
    assert isinstance(second, types.InputRequiredResult)
    assert second.input_requests[REQUEST_KEY].params.messages[0].content.text == "Greet Ada"
    # The last round answers the sampling request; the form's answer comes from the state, not from the client again.
    assert _run(tool, second.request_state, _reply("Hello, Ada")) == "Hello, Ada"
    assert len(ran) == 3


def test_an_answer_stands_only_for_the_request_it_answered():
    prompts = iter(["first prompt", "another prompt"])

    def tool(rounds: ToolRounds) -> str:
        return rounds.answer(_sampling(next(prompts)), types.CreateMessageResult).content.text

    first = _run(tool, None, None)
    again = _run(tool, first.request_state, _reply("for the first prompt"))
    assert isinstance(again, types.InputRequiredResult)  # the tool asked something else: asked anew
    assert again.input_requests[REQUEST_KEY].params.messages[0].content.text == "another prompt"


def test_an_answer_of_the_wrong_kind_is_asked_again():
    def tool(rounds: ToolRounds) -> str:
        return rounds.answer(_sampling("hi"), types.CreateMessageResult).content.text

    first = _run(tool, None, None)
    assert isinstance(_run(tool, first.request_state, {"action": "accept"}), types.InputRequiredResult)


def test_an_answer_without_our_state_is_not_taken():
    def tool(rounds: ToolRounds) -> str:
        return rounds.answer(_sampling("hi"), types.CreateMessageResult).content.text

    assert isinstance(_run(tool, None, _reply("unasked")), types.InputRequiredResult)
    assert isinstance(_run(tool, "not json", _reply("unasked")), types.InputRequiredResult)
    assert isinstance(_run(tool, '{"v": 1, "ask": ["x"]}', _reply("unasked")), types.InputRequiredResult)


def test_a_tool_asks_at_most_its_bound_of_requests_per_call():
    def tool(rounds: ToolRounds) -> None:
        for n in range(MAX_REQUESTS + 1):
            rounds.answer(_sampling(f"question {n}"), types.CreateMessageResult)

    state = None
    for n in range(MAX_REQUESTS):
        result = _run(tool, state, _reply(f"answer {n - 1}") if state else None)
        assert isinstance(result, types.InputRequiredResult)
        state = result.request_state
    with pytest.raises(ClientCannotAnswer):
        _run(tool, state, _reply("last"))


def test_answers_too_large_to_carry_end_the_round_trips():
    def tool(rounds: ToolRounds) -> None:
        rounds.answer(_sampling("one"), types.CreateMessageResult)
        rounds.answer(_sampling("two"), types.CreateMessageResult)

    first = _run(tool, None, None)
    with pytest.raises(ClientCannotAnswer):
        _run(tool, first.request_state, _reply("x" * MAX_STATE_CHARS))

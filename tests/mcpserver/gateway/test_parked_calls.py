"""A 2025-11-25 upstream's requests during a call, answered by a 2026-07-28 client in round trips (the call parked).

Production's served app (``config.asgi``) in a subprocess, in front of ``asking_server.py`` over Streamable HTTP
(2025-11-25 only: it asks in mid-call, on its session); the client is the SDK's, speaking 2026-07-28, whose driver
answers each ``InputRequiredResult`` with its callbacks and calls again. The upstream's tool runs once whatever the
number of rounds; a client that goes away cancels it upstream; one that never answers leaves it to the timeout.
Then the parked calls of one process alone: their bounds, an answer to another call, a question shown again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcpserver.gateway import parking
from mcpserver.gateway.parking import ParkedCall, parked_call
from mcpserver.gateway.round_trip import ELICIT, RoundTrip
from tests.mcpserver.gateway.upstreams import ASKING_SERVER, UpstreamProcess
from tests.support.gateway import gateway_before
from tests.support.mcp import McpTarget
from tests.support.served_app import new_token
from tests.support.waiting import wait_until

INTERVIEW, ASK_THEN_WAIT, COUNTS = "asking__interview", "asking__ask_then_wait", "asking__counts"
# The upstream's timeout, which a parked call's wait for its client counts in; its one slot makes a call that still
# held it visible at once.
TIMEOUT_SECONDS = 10
LEAKED = "ghp_askingLeaked"
ROOTS = types.ListRootsResult(roots=[types.Root(uri="file:///home/ana/project", name="project")])


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[McpTarget, dict[str, str], UpstreamProcess]]:
    limits = ("from errcatalog.gateway.models import Upstream; "
              f"Upstream.objects.update(max_concurrency=1, timeout_seconds={TIMEOUT_SECONDS})")  # fmt: skip
    folder = tmp_path_factory.mktemp("parked")
    with gateway_before(folder, "asking", ASKING_SERVER, {INTERVIEW, COUNTS}, shell=limits) as served:
        yield served


class Answers:
    """A 2026-07-28 client's callbacks (which also declare its capabilities), and what each was asked."""

    def __init__(self) -> None:
        self.forms: list[types.ElicitRequestFormParams] = []
        self.samples: list[types.CreateMessageRequestParams] = []
        self.roots = 0

    async def elicitation(self, context, params) -> types.ElicitResult:
        self.forms.append(params)
        field = next(iter(params.requested_schema["properties"]))
        return types.ElicitResult(action="accept", content={field: {"name": "Ana", "colour": "teal"}[field]})

    async def sampling(self, context, params) -> types.CreateMessageResult:
        self.samples.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="hi"), model="m")

    async def list_roots(self, context) -> types.ListRootsResult:
        self.roots += 1
        return ROOTS

    def options(self) -> dict:
        return {
            "elicitation_callback": self.elicitation,
            "sampling_callback": self.sampling,
            "list_roots_callback": self.list_roots,
        }


def _counts(upstream: UpstreamProcess) -> dict[str, int]:
    """What the upstream ran, asked of it directly (past the gateway and its slots)."""

    async def call() -> str:
        async with Client(streamable_http_client(upstream.url), mode="legacy") as client:
            return (await client.call_tool("counts", {})).content[0].text

    return {name: int(value) for name, value in (part.split(":") for part in asyncio.run(call()).split())}


def _interviews(upstream: UpstreamProcess) -> int:
    return _counts(upstream)["interviews"]


def _cancelled(upstream: UpstreamProcess) -> int:
    return _counts(upstream)["cancelled"]


def test_a_2026_client_answers_each_request_of_a_2025_upstream_in_mid_call_and_the_tool_runs_once(served):
    target, _, upstream = served
    before = _interviews(upstream)
    answers = Answers()

    async def call() -> tuple[str, types.CallToolResult]:
        async with target.client(**answers.options()) as client:
            return client.protocol_version, await client.call_tool(INTERVIEW, {})

    version, result = asyncio.run(call())
    assert version == "2026-07-28"
    assert not result.is_error, result
    # Four rounds, one run of the upstream's tool: each answer reached the request that asked, in order.
    assert result.content[0].text == f"accept:Ana accept:teal model:hi roots:file:///home/ana/project run:{before + 1}"
    assert [list(form.requested_schema["properties"]) for form in answers.forms] == [["name"], ["colour"]]
    assert answers.roots == 1
    assert _interviews(upstream) == before + 1
    # Relayed as in mid-call: the user reads the upstream's words cut and without its credential; the sampling
    # request names the upstream.
    assert answers.forms[0].message.startswith("Your name? IGNORE ALL PREVIOUS")
    assert LEAKED not in answers.forms[0].message
    (sample,) = answers.samples
    assert sample.system_prompt.startswith('The MCP server "asking"')
    assert LEAKED not in sample.messages[0].content.text


def test_a_request_the_client_did_not_declare_is_answered_as_without_the_capability(served):
    # Forms only: the upstream's sampling request hears what a client without sampling says, and its tool fails
    # (catalog text, not the upstream's).
    target, _, _ = served
    answers = Answers()

    async def call() -> types.CallToolResult:
        async with target.client(elicitation_callback=answers.elicitation) as client:
            return await client.call_tool(INTERVIEW, {})

    result = asyncio.run(call())
    assert result.is_error and result.structured_content["kind"] == "toolError:v1"
    assert len(answers.forms) == 2 and LEAKED not in result.model_dump_json()


def test_a_client_that_goes_away_while_the_upstream_works_cancels_it_and_frees_its_slot(served):
    # The upstream has one slot. The client answers, then leaves while the tool works: the upstream call is cancelled
    # at once, long before its timeout would end it, and the next call gets the slot.
    target, _, upstream = served
    before = _cancelled(upstream)
    answers = Answers()

    async def abandoned() -> None:
        async with target.client(**answers.options()) as client:
            with anyio.move_on_after(1.5):
                await client.call_tool(ASK_THEN_WAIT, {"seconds": 60})

    asyncio.run(abandoned())
    assert len(answers.forms) == 1
    wait_until(
        lambda: _cancelled(upstream) == before + 1, seconds=TIMEOUT_SECONDS / 3, what="the upstream call cancelled"
    )


def test_a_client_that_never_answers_holds_the_call_only_until_the_upstreams_timeout(served):
    target, _, _ = served

    async def first_round(client) -> types.InputRequiredResult:
        result = await client.session.call_tool(ASK_THEN_WAIT, {"seconds": 0}, allow_input_required=True)
        assert isinstance(result, types.InputRequiredResult)
        return result

    async def scenario() -> types.InputRequiredResult:
        async with target.client(elicitation_callback=Answers().elicitation) as client:
            unanswered = await first_round(client)
            await anyio.sleep(TIMEOUT_SECONDS + 1)
            # The call was given up upstream: the late answer starts a new one, which asks again.
            (key,) = unanswered.input_requests
            answer = {key: types.ElicitResult(action="accept", content={"name": "Late"})}
            again = await client.session.call_tool(
                ASK_THEN_WAIT, {"seconds": 0}, input_responses=answer, request_state=unanswered.request_state,
                allow_input_required=True,
            )  # fmt: skip
            assert isinstance(again, types.InputRequiredResult) and list(again.input_requests) != [key]
            (new_key,) = again.input_requests
            answer = {new_key: types.ElicitResult(action="accept", content={"name": "Ana"})}
            return await client.session.call_tool(
                ASK_THEN_WAIT, {"seconds": 0}, input_responses=answer, request_state=again.request_state
            )

    result = asyncio.run(scenario())
    assert not result.is_error and result.content[0].text == "accept:Ana"


def test_an_answer_comes_back_only_with_the_state_of_its_own_call_and_client(served):
    # The SDK seals our state and binds it to the client and the call's arguments: another client, or other
    # arguments, cannot answer this call. An answer that does not answer it shows the same question again.
    target, env, _ = served
    other = new_token(env, "other")

    async def scenario() -> types.CallToolResult:
        async with (
            target.client(elicitation_callback=Answers().elicitation) as client,
            target.client(key=other, elicitation_callback=Answers().elicitation) as intruder,
        ):
            first = await client.session.call_tool(ASK_THEN_WAIT, {"seconds": 0}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            (key,) = first.input_requests
            answer = {key: types.ElicitResult(action="accept", content={"name": "Mallory"})}
            for caller, arguments in [(intruder, {"seconds": 0}), (client, {"seconds": 1})]:
                with pytest.raises(MCPError, match="requestState"):
                    await caller.session.call_tool(
                        ASK_THEN_WAIT, arguments, input_responses=answer, request_state=first.request_state
                    )
            again = await client.session.call_tool(
                ASK_THEN_WAIT, {"seconds": 0}, input_responses={}, request_state=first.request_state,
                allow_input_required=True,
            )  # fmt: skip
            assert isinstance(again, types.InputRequiredResult) and list(again.input_requests) == [key]
            answer = {key: types.ElicitResult(action="accept", content={"name": "Ana"})}
            return await client.session.call_tool(
                ASK_THEN_WAIT, {"seconds": 0}, input_responses=answer, request_state=again.request_state
            )

    result = asyncio.run(scenario())
    assert not result.is_error and result.content[0].text == "accept:Ana"


def test_an_upstream_killed_while_a_call_waits_for_its_client_is_answered_from_the_catalog(served):
    # The upstream dies while its call is parked: the client's answer gets the catalog's text for a lost upstream
    # (none of the upstream's words), the call is let go, and once the upstream is back a new call goes through.
    target, _, upstream = served

    async def scenario() -> types.CallToolResult:
        async with target.client(elicitation_callback=Answers().elicitation) as client:
            first = await client.session.call_tool(ASK_THEN_WAIT, {"seconds": 0}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            (key,) = first.input_requests
            upstream.kill()
            answer = {key: types.ElicitResult(action="accept", content={"name": "Ana"})}
            return await client.session.call_tool(
                ASK_THEN_WAIT, {"seconds": 0}, input_responses=answer, request_state=first.request_state
            )

    try:
        result = asyncio.run(scenario())
        assert result.is_error and result.structured_content["code"] == "NETWORK_ERROR", result
        assert result.structured_content["retryable"] is True
    finally:
        if upstream.process is not None and upstream.process.poll() is not None:
            upstream.start()
    answers = Answers()

    async def again() -> types.CallToolResult:
        async with target.client(**answers.options()) as client:
            return await client.call_tool(ASK_THEN_WAIT, {"seconds": 0})

    wait_until(lambda: not asyncio.run(again()).is_error, seconds=30, what="the gateway to reach the upstream again")


# --- The parked calls of one process ------------------------------------------------------------------------------


def _round_trip(state: str | None = None, responses: dict | None = None) -> RoundTrip:
    return RoundTrip(state, responses, frozenset({ELICIT}))


async def _asking(parked: ParkedCall) -> types.CallToolResult:
    answer = await parked.ask("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer.content.get("name", "-"))])


async def _first(client: str = "token:1") -> types.InputRequiredResult:
    result = await parked_call(
        _asking, upstream="u", tool="t", client_key=client, round_trip=_round_trip(), progress=None, log=None
    )
    assert isinstance(result, types.InputRequiredResult)
    return result


def test_a_parked_call_answers_only_its_own_client_upstream_and_tool():
    async def scenario() -> None:
        first = await _first()
        (key,) = first.input_requests
        answer = {key: {"action": "accept", "content": {"name": "Ana"}}}
        for client, upstream, tool in [("token:2", "u", "t"), ("token:1", "v", "t"), ("token:1", "u", "s")]:
            # Not found for them: each starts a call of its own (asked anew), never answering this one.
            other = await parked_call(
                _asking,
                upstream=upstream,
                tool=tool,
                client_key=client,
                round_trip=_round_trip(first.request_state, answer),
                progress=None,
                log=None,
            )
            assert isinstance(other, types.InputRequiredResult) and list(other.input_requests) != [key]
        done = await parked_call(
            _asking,
            upstream="u",
            tool="t",
            client_key="token:1",
            round_trip=_round_trip(first.request_state, answer),
            progress=None,
            log=None,
        )
        assert isinstance(done, types.CallToolResult) and done.content[0].text == "Ana"
        parking.cancel_all()

    asyncio.run(scenario())


def test_parked_calls_are_bounded_per_client_and_per_process(monkeypatch):
    monkeypatch.setattr(parking, "MAX_PARKED_PER_CLIENT", 2)
    monkeypatch.setattr(parking, "MAX_PARKED", 3)

    async def scenario() -> list[bool]:
        parked = []
        for client in ["token:1", "token:1", "token:1", "token:2", "token:3"]:
            result = await parked_call(
                _asking, upstream="u", tool="t", client_key=client, round_trip=_round_trip(), progress=None, log=None
            )
            parked.append(result is not None)
        parking.cancel_all()
        await asyncio.sleep(0)
        return parked

    # The third of one client's and the fourth of the process's go on without parking (the caller's usual way).
    assert asyncio.run(scenario()) == [True, True, False, True, False]
    assert parking.parked_count() == 0

"""An upstream's ``notifications/elicitation/complete`` reaches the client session its URL elicitation was relayed to,
and no other.

Production's served app (``config.asgi``) in a subprocess, in front of ``sign_in_server.py`` over Streamable HTTP
(2025-11-25: a session of its own per client session); two clients of the SDK's, connected at once. Then the relay's
memory alone: the channel two sessions share, the session that ended, its bounds, a session that cannot be told.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from mcpserver.gateway import elicitation_complete
from mcpserver.gateway.elicitation_complete import RelayedElicitations, relay_completion, remember
from tests.mcpserver.gateway.sign_in_server import HOSTILE, SIGN_IN_URL
from tests.mcpserver.gateway.upstreams import SIGN_IN_SERVER
from tests.support.gateway import gateway_before
from tests.support.mcp import McpTarget

SIGN_IN, NEEDS_SIGN_IN, FINISH = "signin__sign_in", "signin__needs_sign_in", "signin__finish"
# How long a client waits for a notification that is on its way.
HEARD_SECONDS = 20


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[McpTarget]:
    with gateway_before(tmp_path_factory.mktemp("elicitation-complete"), "signin", SIGN_IN_SERVER,
                        {SIGN_IN, FINISH}) as (target, _, _):  # fmt: skip
        yield target


class Client:
    """What one client is asked to open and what completions it hears."""

    def __init__(self) -> None:
        self.asked: list[types.ElicitRequestURLParams] = []
        self.heard: list[types.ElicitCompleteNotificationParams] = []

    async def elicitation(self, context, params) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action="accept")

    async def messages(self, message) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            self.heard.append(message.params)

    async def hears(self, count: int) -> None:
        with anyio.fail_after(HEARD_SECONDS):
            while len(self.heard) < count:
                await anyio.sleep(0.05)

    @property
    def ids(self) -> list[str]:
        return [params.elicitation_id for params in self.heard]


def _two_clients(served: McpTarget, a: Client, b: Client):
    return (
        served.client(mode="legacy", elicitation_callback=a.elicitation, message_handler=a.messages),
        served.client(mode="legacy", elicitation_callback=b.elicitation, message_handler=b.messages),
    )


def _text(result: types.CallToolResult) -> str:
    return result.content[0].text


def test_a_url_elicitations_completion_reaches_the_session_it_was_relayed_to_and_no_other(served):
    a, b = Client(), Client()

    async def scenario() -> None:
        with_a, with_b = _two_clients(served, a, b)
        async with with_a as client_a, with_b as client_b:
            # Both are asked under the same id, each over its own upstream session.
            assert _text(await client_a.call_tool(SIGN_IN, {"elicitation_id": "sign-in-1"})) == "accept"
            assert _text(await client_b.call_tool(SIGN_IN, {"elicitation_id": "sign-in-1"})) == "accept"
            await client_a.call_tool(FINISH, {"elicitation_id": "never-relayed"})  # dropped
            await client_a.call_tool(FINISH, {"elicitation_id": "sign-in-1"})
            await a.hears(1)
            await client_b.call_tool(FINISH, {"elicitation_id": "sign-in-1"})
            await b.hears(1)
            # Told once: the upstream saying it again tells nobody.
            await client_a.call_tool(FINISH, {"elicitation_id": "sign-in-1"})
            await client_b.call_tool(FINISH, {"elicitation_id": "sign-in-1"})
            assert _text(await client_a.call_tool(SIGN_IN, {"elicitation_id": "sign-in-2"})) == "accept"
            await client_a.call_tool(FINISH, {"elicitation_id": "sign-in-2"})
            await a.hears(2)

    asyncio.run(scenario())
    assert [params.url for params in a.asked + b.asked] == [SIGN_IN_URL] * 3
    assert a.ids == ["sign-in-1", "sign-in-2"] and b.ids == ["sign-in-1"]
    # The id and nothing else of the upstream's.
    assert all(params.meta is None for params in a.heard + b.heard)
    assert HOSTILE not in repr(a.heard + b.heard)


def test_the_completion_of_an_elicitation_relayed_in_a_32042_error_reaches_that_session_alone(served):
    a, b = Client(), Client()

    async def required(client, elicitation_id: str) -> list[dict]:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(NEEDS_SIGN_IN, {"elicitation_id": elicitation_id})
        assert raised.value.code == types.URL_ELICITATION_REQUIRED
        return raised.value.data["elicitations"]

    async def scenario() -> list[dict]:
        with_a, with_b = _two_clients(served, a, b)
        async with with_a as client_a, with_b as client_b:
            relayed = await required(client_a, "auth-1")
            # B's upstream session says that A's elicitation completed: it reaches neither.
            await client_b.call_tool(FINISH, {"elicitation_id": "auth-1"})
            await required(client_a, "auth-2")
            await client_a.call_tool(FINISH, {"elicitation_id": "auth-2"})
            await a.hears(1)
            await required(client_b, "auth-3")
            await client_b.call_tool(FINISH, {"elicitation_id": "auth-3"})
            await b.hears(1)
            return relayed

    (elicitation,) = asyncio.run(scenario())
    assert elicitation["elicitationId"] == "auth-1" and elicitation["url"] == SIGN_IN_URL
    assert a.ids == ["auth-2"] and b.ids == ["auth-3"]
    assert not a.asked and not b.asked  # the error path asks nothing in mid-call


# --- The relay's memory ----------------------------------------------------------------------------------------


class Stream:
    """A 2025-11-25 session's own stream: records what it is told, or fails as one that ended."""

    def __init__(self, *, ended: bool = False) -> None:
        self.told: list[str] = []
        self.ended = ended

    async def send_elicit_complete(self, elicitation_id: str) -> None:
        if self.ended:
            raise anyio.ClosedResourceError
        self.told.append(elicitation_id)


def test_an_id_relayed_on_a_shared_channel_to_two_sessions_is_told_to_neither():
    one, two = Stream(), Stream()
    remember("local", "", "auth-1", ("session-1", one))
    remember("local", "", "auth-1", ("session-2", two))
    remember("local", "", "auth-1", ("session-1", one))  # asked again: still two sessions
    asyncio.run(relay_completion("local", "", "auth-1"))
    assert one.told == [] and two.told == []


def test_what_was_relayed_to_a_session_that_ended_is_forgotten_and_a_broken_stream_costs_nothing():
    gone, broken = Stream(), Stream(ended=True)
    remember("web", "session-1", "auth-1", ("session-1", gone))
    remember("web", "session-2", "auth-2", ("session-2", broken))
    elicitation_complete.forget_session("session-1")
    asyncio.run(relay_completion("web", "session-1", "auth-1"))
    asyncio.run(relay_completion("web", "session-2", "auth-2"))  # raises nothing
    assert gone.told == []


def test_a_2026_client_is_remembered_for_nothing_and_one_upstream_cannot_complete_anothers():
    stream = Stream()
    remember("web", "", "auth-1", None)  # a 2026-07-28 request: no session to tell
    remember("web", "", "auth-2", ("session-1", stream))
    asyncio.run(relay_completion("web", "", "auth-1"))
    asyncio.run(relay_completion("other", "", "auth-2"))
    assert stream.told == []
    asyncio.run(relay_completion("web", "", "auth-2"))
    assert stream.told == ["auth-2"]


def test_the_memory_is_bounded_in_size_and_age():
    relayed = RelayedElicitations(max_entries=2, max_age=900)
    for n in range(3):
        relayed.remember(("web", "", f"auth-{n}"), (f"session-{n}", Stream()))
    assert len(relayed) == 2 and relayed.take(("web", "", "auth-0")) is None  # the oldest went
    assert relayed.take(("web", "", "auth-2")) is not None
    expired = RelayedElicitations(max_entries=2, max_age=0)
    expired.remember(("web", "", "auth-1"), ("session-1", Stream()))
    assert expired.take(("web", "", "auth-1")) is None

"""Two clients of the gateway against each other: what one client's upstream state holds never reaches another.

Production's served app (``config.asgi``) in a subprocess, in front of real upstreams: ``asking_server.py`` (it asks
its client in mid-call) and ``watched_server.py`` (subscriptions, list changes) over Streamable HTTP in 2025-11-25,
where each client session has an upstream session of its own, and each of them over stdio too, one child that every
client shares; ``upstream_server.py`` over stdio, shared too (log messages). The clients are the SDK's, over HTTP, in
both protocol generations, with tokens of two users: ``alice`` (twice: ``alice``, ``alice_again``) and ``bob``. In each
test the second client attacks the first one's state, and a positive control shows what the first one does get.

- A 2026-07-28 client's call parked on a 2025-11-25 upstream (``mcpserver.gateway.parking``): another token, of the
  same user or another, can neither answer it, nor see its question again, nor cancel it, with its sealed state, a
  forged one, its ``upstream:<id>.<n>`` key or its ``Errcatalog-Park`` id; a state replayed after the question it
  came with (or after its call ended) answers nothing.
- A 2025-11-25 session's upstream sessions: another client neither hears nor lets go of its subscriptions, hears no
  list change its own upstream session said, gets none of its log messages or elicitations, and cannot use its
  session (and so its upstream state) by sending its ``Mcp-Session-Id``.
- A stdio child every client shares: its list changes reach all of them (they share its lists), its updates only
  those who hold the URI, and what could belong to either of two calls in flight (a log message, an elicitation) to
  neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.mcpserver.gateway.upstreams import (
    ASKING_SERVER,
    UPSTREAM_SERVER,
    WATCHED_SERVER,
    UpstreamProcess,
    gateway_environment,
)
from tests.support.served_app import ServedApp, manage
from tests.support.waiting import wait_until

SCHEME = "errcatalog-upstream://"
ONE, TWO = "watch://one", "watch://two"
LISTS = {"ResourceListChangedNotification", "PromptListChangedNotification"}
ASK, INTERVIEW = "asking__ask_then_wait", "asking__interview"
PARK_HEADER = "errcatalog-park"
# How long a scenario waits for what it expects before it fails (a bound, never a timing assertion).
WAIT = 20

# The tokens, by name, and the user each belongs to.
TOKENS = {"alice": "alice", "alice_again": "alice", "bob": "bob"}
_SETUP = """
import json
from django.contrib.auth.models import User
from errcatalog.access.tokens import client_token_create
from errcatalog.gateway.models import Upstream

# Room for the calls the tests leave parked (each holds a slot until its upstream's timeout).
Upstream.objects.update(trusted=True, max_concurrency=32, timeout_seconds=30)
keys = {}
for name, username in TOKENS.items():
    user, _ = User.objects.get_or_create(username=username)
    keys[name] = client_token_create(user=user, name=name)[1]
print(json.dumps(keys))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("isolation")
    asking = UpstreamProcess(ASKING_SERVER, "http", log=folder / "asking.log")
    watched = UpstreamProcess(WATCHED_SERVER, "http", log=folder / "watched.log")
    for process in (asking, watched):
        process.start()
    env = gateway_environment(folder / "data")
    servers = {
        "mcpServers": {
            "asking": {"type": "http", "url": asking.url},
            "asking-stdio": {"command": sys.executable, "args": [ASKING_SERVER, "stdio"]},
            "watched": {"type": "http", "url": watched.url},
            "watched-stdio": {"command": sys.executable, "args": [WATCHED_SERVER, "stdio"]},
            "shared": {"command": sys.executable, "args": [UPSTREAM_SERVER, "stdio"]},
        }
    }
    (folder / "mcp.json").write_text(json.dumps(servers))
    manage(env, "upstream_import", str(folder / "mcp.json"))
    keys = json.loads(manage(env, "shell", "--no-imports", "-c", f"TOKENS = {TOKENS!r}\n{_SETUP}").splitlines()[-1])
    app = ServedApp(env, folder).start()
    served = {"app": app, "asking": asking, **keys}
    wanted = {ASK, "asking_stdio__ask_then_wait", "watched__relist_mine", "watched_stdio__touch", "shared__log_hostile"}

    async def listed() -> set[str]:
        async with _client(served, "alice") as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    wait_until(lambda: wanted <= asyncio.run(listed()), seconds=90, what="the upstreams' tools")
    yield served
    app.stop()
    for process in (asking, watched):
        process.kill()


class Seen:
    """What one client's HTTP responses said: the parked calls they named, the sessions they opened."""

    def __init__(self) -> None:
        self.parked: list[str] = []
        self.sessions: list[str] = []

    async def __call__(self, response: httpx2.Response) -> None:
        if parked := response.headers.get(PARK_HEADER):
            self.parked.append(parked)
        if (session := response.headers.get("mcp-session-id")) and session not in self.sessions:
            self.sessions.append(session)


@contextlib.asynccontextmanager
async def _client(
    served: dict,
    token: str,
    server: str = "",
    *,
    mode: str = "auto",
    seen: Seen | None = None,
    headers: dict[str, str] | None = None,
    **options,
) -> AsyncIterator[Client]:
    """The SDK's client at ``/mcp`` (or ``/mcp/<server>``) with ``token``'s key; ``seen`` reads its responses."""
    url = f"{served['app'].mcp_url}/{server}".rstrip("/")
    hooks = {"response": [seen]} if seen is not None else {}
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {served[token]}", **(headers or {})},
            timeout=httpx2.Timeout(WAIT),
            event_hooks=hooks,
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **options) as client,
    ):
        yield client


# --- Calls parked for a 2026-07-28 client -----------------------------------------------------------------------


class Answers:
    """A 2026-07-28 client's callbacks (they declare what it can answer), never called: the tests answer by hand."""

    async def elicitation(self, context, params) -> types.ElicitResult:
        raise AssertionError("answered by hand")

    async def sampling(self, context, params) -> types.CreateMessageResult:
        raise AssertionError("answered by hand")

    async def list_roots(self, context) -> types.ListRootsResult:
        raise AssertionError("answered by hand")

    def options(self) -> dict:
        return {
            "elicitation_callback": self.elicitation,
            "sampling_callback": self.sampling,
            "list_roots_callback": self.list_roots,
        }


def _parking(served: dict, token: str, **options):
    return _client(served, token, **Answers().options(), **options)


def _name(name: str) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": name})


async def _ask(
    client: Client,
    tool: str = ASK,
    *,
    answers: dict | None = None,
    state: str | None = None,
    arguments: dict | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """One request of a call, carrying ``answers`` and ``state`` when given."""
    return await client.session.call_tool(
        tool,
        {"seconds": 0} if arguments is None and tool == ASK else (arguments or {}),
        input_responses=answers,
        request_state=state,
        allow_input_required=True,
    )


async def _first(
    client: Client, tool: str = ASK, arguments: dict | None = None
) -> tuple[str, types.InputRequiredResult]:
    """A call's first request: the key of the upstream's question and the round's result."""
    result = await _ask(client, tool, arguments=arguments)
    assert isinstance(result, types.InputRequiredResult), result
    (key,) = result.input_requests
    return key, result


def _text(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult), result
    assert not result.is_error, result
    return result.content[0].text


def _counts(served: dict) -> dict[str, int]:
    """What the HTTP asking upstream ran, asked of it directly (past the gateway)."""

    async def call() -> str:
        async with Client(streamable_http_client(served["asking"].url), mode="legacy") as client:
            return (await client.call_tool("counts", {})).content[0].text

    return {name: int(value) for name, value in (part.split(":") for part in asyncio.run(call()).split())}


@pytest.mark.parametrize("intruder", ["alice_again", "bob"])
def test_another_token_of_the_user_or_another_users_cannot_answer_a_parked_call_or_see_its_question(served, intruder):
    async def scenario() -> tuple[list[MCPError], types.CallToolResult]:
        refused: list[MCPError] = []
        async with _parking(served, "alice") as alice, _parking(served, intruder) as other:
            key, first = await _first(alice)
            # Answering it, and asking to be shown its question again (a state without an answer).
            for answers in ({key: _name("Mallory")}, {}):
                with pytest.raises(MCPError, match="requestState") as raised:
                    await _ask(other, answers=answers, state=first.request_state)
                refused.append(raised.value)
            # The call is still parked, unanswered: its own client answers it.
            return refused, await _ask(alice, answers={key: _name("Ana")}, state=first.request_state)

    refused, result = asyncio.run(scenario())
    assert len(refused) == 2
    assert all("Mallory" not in repr(error) and "Your name" not in repr(error) for error in refused)
    assert _text(result) == "accept:Ana"


def test_a_forged_state_a_guessed_key_or_a_parked_calls_id_reach_no_one_elses_call(served):
    alice_seen, bob_seen = Seen(), Seen()

    async def scenario() -> tuple[str, str, list[str], types.CallToolResult]:
        async with (
            _parking(served, "alice", seen=alice_seen) as alice,
            _parking(served, "bob", seen=bob_seen) as bob,
        ):
            key, first = await _first(alice)
            parked = alice_seen.parked[-1]  # what names alice's call for a load balancer
            # A state of our form naming alice's call, not sealed by the server: refused before it is read.
            forged = json.dumps({"park": {"v": 1, "id": parked, "upstream": "asking", "tool": "ask_then_wait"}})
            with pytest.raises(MCPError, match="requestState"):
                await _ask(bob, answers={key: _name("Mallory")}, state=forged)
            # Bob's own parked call, answered under alice's key: not an answer to his question, which is shown again.
            own_key, own = await _first(bob)
            again = await _ask(bob, answers={key: _name("Mallory")}, state=own.request_state)
            assert isinstance(again, types.InputRequiredResult)
            keys = [own_key, *again.input_requests]
            # Alice's key and her call's id in the park header, without a state: a new call of bob's own.
            async with _parking(served, "bob", seen=bob_seen, headers={PARK_HEADER: parked}) as pointed:
                fresh = await _ask(pointed, answers={key: _name("Mallory")})
            assert isinstance(fresh, types.InputRequiredResult)
            keys += list(fresh.input_requests)
            return key, parked, keys, await _ask(alice, answers={key: _name("Ana")}, state=first.request_state)

    key, parked, bobs_keys, result = asyncio.run(scenario())
    assert key == f"upstream:{parked}.1"
    assert bobs_keys[0] == bobs_keys[1] != key  # his own question, shown again
    assert bobs_keys[2] not in (key, bobs_keys[0])  # a call of his own, asked anew
    assert parked not in bob_seen.parked and len(set(bob_seen.parked)) == 2  # his two calls, never alice's
    assert _text(result) == "accept:Ana"  # "Mallory" reached nothing of alice's


def test_another_clients_request_that_goes_away_cancels_only_its_own_parked_call(served):
    before = _counts(served)["cancelled"]

    async def scenario() -> types.CallToolResult:
        async with _parking(served, "alice") as alice, _parking(served, "bob") as bob:
            key, first = await _first(alice)
            # Bob's request with alice's state is refused before it reaches her call: nothing of hers ends with it.
            with pytest.raises(MCPError, match="requestState"):
                await _ask(bob, answers={key: _name("Mallory")}, state=first.request_state)
            # Bob's own call: answered, then he leaves while the upstream works; his upstream call is cancelled.
            own_key, own = await _first(bob, ASK, {"seconds": 60})
            with anyio.move_on_after(1.5):
                await _ask(bob, arguments={"seconds": 60}, answers={own_key: _name("Bob")}, state=own.request_state)
            return await _ask(alice, answers={key: _name("Ana")}, state=first.request_state)

    result = asyncio.run(scenario())
    assert _text(result) == "accept:Ana"  # alice's call was never cancelled
    wait_until(lambda: _counts(served)["cancelled"] == before + 1, seconds=WAIT, what="bob's upstream call cancelled")


def test_a_state_replayed_after_its_question_or_its_call_answers_nothing(served):
    async def scenario() -> tuple[list[str], list[str], types.CallToolResult, types.CallToolResult]:
        async with _parking(served, "alice") as alice, _parking(served, "bob") as bob:
            # In mid-call: the state of the first question, replayed with its answer once the second is shown,
            # shows the second again; the old answer is not taken for it.
            name_key, first = await _first(alice, INTERVIEW)
            second = await _ask(alice, INTERVIEW, answers={name_key: _name("Ana")}, state=first.request_state)
            assert isinstance(second, types.InputRequiredResult)
            stale = await _ask(alice, INTERVIEW, answers={name_key: _name("Mallory")}, state=first.request_state)
            assert isinstance(stale, types.InputRequiredResult)
            keys = [name_key, *second.input_requests, *stale.input_requests]
            result = await _interviewed(alice, stale)
            # After the call: alice's state starts a new call, asked anew, with the old answer taken for nothing;
            # bob's replay of it is refused.
            key, done = await _first(alice)
            assert _text(await _ask(alice, answers={key: _name("Ana")}, state=done.request_state)) == "accept:Ana"
            with pytest.raises(MCPError, match="requestState"):
                await _ask(bob, answers={key: _name("Mallory")}, state=done.request_state)
            replayed = await _ask(alice, answers={key: _name("Mallory")}, state=done.request_state)
            assert isinstance(replayed, types.InputRequiredResult)
            later = [key, *replayed.input_requests]
            again = await _ask(alice, answers={later[1]: _name("Ana")}, state=replayed.request_state)
            return keys, later, result, again

    keys, later, interviewed, again = asyncio.run(scenario())
    assert keys[1] == keys[2] != keys[0]  # the second question, shown again
    assert _text(interviewed).startswith("accept:Ana accept:teal ")  # "Mallory" was never the name
    assert later[1] != later[0]
    assert _text(again) == "accept:Ana"


async def _interviewed(client: Client, shown: types.InputRequiredResult) -> types.CallToolResult:
    """The interview's remaining questions, answered: the colour, the model, the roots."""
    result: types.CallToolResult | types.InputRequiredResult = shown
    while isinstance(result, types.InputRequiredResult):
        ((key, request),) = result.input_requests.items()
        if isinstance(request, types.ElicitRequest):
            answer: object = types.ElicitResult(action="accept", content={"colour": "teal"})
        elif isinstance(request, types.CreateMessageRequest):
            answer = types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="hi"),
                                               model="m")  # fmt: skip
        else:
            answer = types.ListRootsResult(roots=[])
        result = await _ask(client, INTERVIEW, answers={key: answer}, state=result.request_state)
    return result


# --- Resource subscriptions -------------------------------------------------------------------------------------


class Heard:
    """What one client heard: resource updates by URI, list changes by kind."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.lists: dict[str, int] = defaultdict(int)

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updates.append(str(message.params.uri))
        elif isinstance(message, types.ResourceListChangedNotification | types.PromptListChangedNotification):
            self.lists[type(message).__name__] += 1


async def _until(condition, what: str) -> None:
    try:
        async with asyncio.timeout(WAIT):
            while not condition():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"never heard: {what}") from None


async def _held(client: Client, prefix: str) -> dict[str, int]:
    result = await client.call_tool(f"{prefix}__held", {})
    return json.loads(result.content[0].text)


@pytest.mark.parametrize(("upstream", "prefix"), [("watched", "watched"), ("watched-stdio", "watched_stdio")])
def test_another_client_neither_hears_nor_lets_go_of_a_clients_subscription(served, upstream, prefix):
    """Over HTTP each holds on its own upstream session; on the stdio child every client shares, the gateway holds a
    URI once for all who hold it, and counts them."""
    mine, theirs = Heard(), Heard()
    one, two = f"{SCHEME}{upstream}/{ONE}", f"{SCHEME}{upstream}/{TWO}"

    async def scenario() -> dict[str, int]:
        async with _client(served, "alice", mode="legacy", message_handler=mine) as alice:
            await alice.subscribe_resource(one)
            async with _client(served, "bob", mode="legacy", message_handler=theirs) as bob:
                await bob.unsubscribe_resource(one)  # never held by bob: lets go of nothing
                await bob.subscribe_resource(two)
                await alice.call_tool(f"{prefix}__touch", {"uri": ONE})
                await _until(lambda: mine.updates, "alice's update")
                await bob.subscribe_resource(one)
            # Bob's session ended holding it: only his hold is let go.
            await alice.call_tool(f"{prefix}__touch", {"uri": ONE})
            await _until(lambda: len(mine.updates) == 2, "alice's second update")
            async with asyncio.timeout(WAIT):
                while (held := await _held(alice, prefix)) != {ONE: 1}:
                    await asyncio.sleep(0.1)
            return held

    assert asyncio.run(scenario()) == {ONE: 1}  # alice's, held once upstream; bob's let go
    assert mine.updates == [one, one]
    assert theirs.updates == []


# --- List changes ------------------------------------------------------------------------------------------------


def test_a_list_change_said_on_one_clients_own_upstream_session_reaches_that_client_alone(served):
    """``relist_mine`` tells the calling session alone that its lists changed (a server with lists per session);
    ``relist`` tells every session, the gateway's shared one too, which everyone hears of."""
    mine, theirs, at_path = Heard(), Heard(), Heard()
    streamed: list[str] = []

    async def listen(client: Client) -> None:
        async with client.listen(
            resources_list_changed=True, prompts_list_changed=True, resource_subscriptions=[f"{SCHEME}watched/{TWO}"]
        ) as stream:
            async for event in stream:
                streamed.append(type(event).__name__)

    async def scenario() -> tuple[dict, dict, list[str]]:
        async with (
            _client(served, "alice", mode="legacy", message_handler=mine) as alice,
            _client(served, "bob", mode="legacy", message_handler=theirs) as bob,
            _client(served, "bob", "watched", mode="legacy", message_handler=at_path) as there,
            _client(served, "bob") as modern,
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(listen, modern)
            await bob.subscribe_resource(f"{SCHEME}watched/{TWO}")
            await there.subscribe_resource(TWO)
            await alice.call_tool("watched__relist_mine", {})
            await _until(lambda: mine.lists.keys() >= LISTS, "alice's own list changes")
            # Whatever bob's clients would have been told with alice came before this update, which each hears.
            async with asyncio.timeout(WAIT):  # until the listen stream holds the URI upstream
                while not (theirs.updates and at_path.updates and "ResourceUpdated" in streamed):
                    await alice.call_tool("watched__touch", {"uri": TWO})
                    await asyncio.sleep(0.3)
            before = dict(theirs.lists), dict(at_path.lists), list(streamed)
            # The positive control: each hears a change the upstream says on every session.
            await alice.call_tool("watched__relist", {})
            await _until(lambda: theirs.lists.keys() >= LISTS and at_path.lists.keys() >= LISTS, "the change")
            await _until(lambda: {"ResourcesListChanged", "PromptsListChanged"} <= set(streamed), "the change")
            tasks.cancel_scope.cancel()
        return before

    theirs_before, at_path_before, streamed_before = asyncio.run(scenario())
    assert theirs_before == at_path_before == {}
    assert set(streamed_before) == {"ResourceUpdated"}


def test_a_shared_stdio_childs_list_changes_reach_every_client_of_it_and_no_other_upstreams(served):
    """One child for every client: a change it says is a change of what they all share, heard at ``/mcp`` and at its
    own path, as its own list changes are; a client of another upstream's path hears nothing of it."""
    mine, theirs, at_path, elsewhere = Heard(), Heard(), Heard(), Heard()

    async def scenario() -> None:
        async with (
            _client(served, "alice", mode="legacy", message_handler=mine) as alice,
            _client(served, "bob", mode="legacy", message_handler=theirs),
            _client(served, "bob", "watched-stdio", mode="legacy", message_handler=at_path),
            _client(served, "bob", "watched", mode="legacy", message_handler=elsewhere) as there,
        ):
            await there.subscribe_resource(TWO)
            await alice.call_tool("watched_stdio__relist_mine", {})
            heard = (mine, theirs, at_path)
            await _until(lambda: all(client.lists.keys() >= LISTS for client in heard), "the child's list changes")
            async with asyncio.timeout(WAIT):
                while not elsewhere.updates:
                    await alice.call_tool("watched__touch", {"uri": TWO})
                    await asyncio.sleep(0.3)

    asyncio.run(scenario())
    assert not elsewhere.lists


# --- Elicitations -------------------------------------------------------------------------------------------------


class Asked:
    """A 2025-11-25 client that answers each form with its own name, once ``ready`` lets it."""

    def __init__(self, name: str, ready: asyncio.Event | None = None) -> None:
        self.name = name
        self.ready = ready
        self.asked = asyncio.Event()
        self.forms: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context, params) -> types.ElicitResult:
        self.forms.append(params)
        self.asked.set()
        if self.ready is not None:
            await asyncio.wait_for(self.ready.wait(), WAIT)
        return _name(self.name)


def test_two_clients_asked_at_once_on_their_own_upstream_sessions_each_answer_their_own_call(served):
    """Both calls wait for their users at once. Each question comes on the client's own upstream session, and over
    HTTP on the stream of the call it belongs to as well: either alone keeps each answer with its own call."""

    async def scenario() -> tuple[Asked, Asked, list[str]]:
        both = asyncio.Event()
        alice_asked, bob_asked = Asked("Ana", both), Asked("Bob", both)
        async with (
            _client(served, "alice", mode="legacy", elicitation_callback=alice_asked) as alice,
            _client(served, "bob", mode="legacy", elicitation_callback=bob_asked) as bob,
        ):
            calls = [asyncio.create_task(client.call_tool(ASK, {"seconds": 0})) for client in (alice, bob)]
            # Neither answers before both are asked: two questions open at once, one on each upstream session.
            await asyncio.wait_for(asyncio.gather(alice_asked.asked.wait(), bob_asked.asked.wait()), WAIT)
            both.set()
            return alice_asked, bob_asked, [_text(result) for result in await asyncio.gather(*calls)]

    alice_asked, bob_asked, texts = asyncio.run(scenario())
    assert texts == ["accept:Ana", "accept:Bob"]
    assert len(alice_asked.forms) == len(bob_asked.forms) == 1


def test_on_a_shared_stdio_child_a_question_while_two_clients_calls_are_in_flight_is_asked_of_neither(served):
    """The child asks on the session every client shares, naming no call: while bob's call is in flight, the question
    alice's call brings could be his, so it is declined, and bob is never shown it. Alone, alice is asked."""
    tool = "asking_stdio__ask_then_wait"

    async def scenario() -> tuple[Asked, Asked, list[str]]:
        alice_asked, bob_asked = Asked("Ana"), Asked("Bob")
        async with (
            _client(served, "alice", mode="legacy", elicitation_callback=alice_asked) as alice,
            _client(served, "bob", mode="legacy", elicitation_callback=bob_asked) as bob,
        ):
            working = asyncio.create_task(bob.call_tool(tool, {"seconds": 3}))  # asked, answers, then works
            await asyncio.wait_for(bob_asked.asked.wait(), WAIT)
            await asyncio.sleep(0.5)
            during = _text(await alice.call_tool(tool, {"seconds": 0}))
            texts = [during, _text(await working), _text(await alice.call_tool(tool, {"seconds": 0}))]
            return alice_asked, bob_asked, texts

    alice_asked, bob_asked, texts = asyncio.run(scenario())
    assert texts == ["decline:", "accept:Bob", "accept:Ana"]
    assert len(bob_asked.forms) == 1  # his own question only
    assert len(alice_asked.forms) == 1  # when her call was the only one


# --- Log messages and levels ----------------------------------------------------------------------------------


def test_on_a_shared_stdio_child_each_client_keeps_its_level_and_hears_only_its_own_calls_messages(served):
    async def scenario() -> tuple[list, list, list]:
        mine: list[types.LoggingMessageNotificationParams] = []
        theirs: list[types.LoggingMessageNotificationParams] = []

        async def collect(into: list):
            async def collected(params: types.LoggingMessageNotificationParams) -> None:
                into.append(params)

            return collected

        async with (
            _client(served, "alice", mode="legacy", logging_callback=await collect(mine)) as alice,
            _client(served, "bob", mode="legacy", logging_callback=await collect(theirs)) as bob,
        ):
            await alice.set_logging_level("debug")
            await bob.set_logging_level("error")
            await bob.call_tool("shared__log_hostile", {})  # at bob's level, not alice's
            await alice.call_tool("shared__log_hostile", {})  # at alice's
            alone = len(mine), len(theirs)
            # Bob's call in flight on the child: alice's messages could be his, so they go to neither.
            working = asyncio.create_task(bob.call_tool("shared__hang", {"seconds": 2}))
            await asyncio.sleep(0.5)
            await alice.call_tool("shared__log_hostile", {})
            assert _text(await working) == "late"
        return mine[: alone[0]], theirs[: alone[1]], mine[alone[0] :] + theirs[alone[1] :]

    mine, theirs, during = asyncio.run(scenario())
    assert [m.level for m in mine] == ["debug", "info", "warning", "error", "error"]
    assert [m.level for m in theirs] == ["error", "error"]
    assert during == []


# --- Another token on a client's session ---------------------------------------------------------------------


@pytest.mark.parametrize("intruder", ["alice_again", "bob"])
def test_another_token_cannot_use_or_end_a_clients_session_and_its_upstream_state_stays(served, intruder):
    """The SDK binds a 2025-11-25 session to the token that opened it; the gateway's state of that session (its own
    upstream session, its subscriptions, its level) ends with the session only, not with another's request."""
    heard, seen = Heard(), Seen()
    one = f"{SCHEME}watched/{ONE}"

    async def scenario() -> tuple[list[int], dict[str, int]]:
        async with _client(served, "alice", mode="legacy", message_handler=heard, seen=seen) as alice:
            await alice.subscribe_resource(one)
            (session,) = seen.sessions
            headers = {
                "Authorization": f"Bearer {served[intruder]}",
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": "2025-11-25",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            }
            unsubscribe = {"jsonrpc": "2.0", "id": 1, "method": "resources/unsubscribe", "params": {"uri": one}}
            url = served["app"].mcp_url
            async with httpx2.AsyncClient(timeout=WAIT) as http:
                statuses = [(await http.post(url, json=unsubscribe, headers=headers)).status_code]
                async with http.stream("GET", url, headers=headers) as stream:  # alice's notifications
                    statuses.append(stream.status_code)
                statuses.append((await http.delete(url, headers=headers)).status_code)
            await alice.call_tool("watched__touch", {"uri": ONE})
            await _until(lambda: heard.updates, "alice's update")
            return statuses, await _held(alice, "watched")

    statuses, held = asyncio.run(scenario())
    assert statuses == [404, 404, 404]  # as an unknown session is answered
    assert heard.updates == [one]
    assert held == {ONE: 1}

"""Resource subscriptions and list changes of upstreams, through /mcp and each upstream's own path.

Production's served app (``offerings_app``) in front of ``watched_server.py``, whose subscriptions can be watched from
outside (``held``) and whose resources change when asked (``touch``, ``relist``): over HTTP in 2025-11-25, where each
client session has an upstream session of its own (``watched``), over stdio with one shared child
(``watched-stdio``), and over HTTP in 2026-07-28, where the gateway listens for changes (``watched-modern``); and
npm's unmodified ``server-everything`` over HTTP, whose ``toggle-subscriber-updates`` updates the calling session's
subscriptions. The clients are the SDK's, in both protocol generations.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import mcp_types as types
import pytest

from tests.support.mcp import McpTarget
from tests.support.served_app import manage
from tests.support.waiting import wait_until

SCHEME = "errcatalog-upstream://"
ONE = "watch://one"
TEXT = "demo://resource/dynamic/text/1"
LIST_CHANGES = (
    types.ResourceListChangedNotification,
    types.PromptListChangedNotification,
    types.ToolListChangedNotification,
)
OFFERINGS_CHANGED = {"ResourceListChangedNotification", "PromptListChangedNotification"}
# How long a scenario waits for what it expects before it fails (never a timing assertion: only a bound).
WAIT = 20


# A named server staff composed of one watched upstream (``team``): it hears of that upstream's lists alone.
TEAM = """
from errcatalog.gateway.models import NamedServer, NamedServerUpstream, Upstream
server = NamedServer.objects.create(name="team", description="", tools=[])
NamedServerUpstream.objects.create(server=server, upstream=Upstream.objects.get(name="watched"), tools=[])
"""


@pytest.fixture(scope="module")
def served(offerings_app) -> dict:
    manage(offerings_app["env"], "shell", "--no-imports", "-c", TEAM)
    team = _at(offerings_app, "team")
    wait_until(lambda: "watched__touch" in _tools_or_none(team), seconds=WAIT, what="the named server")
    return offerings_app


def _tools_or_none(target: McpTarget) -> set[str]:
    try:
        return target.tool_names()
    except Exception:  # its path answers 404 until the gateway has read it
        return set()


def _at(served: dict, server: str = "") -> McpTarget:
    return McpTarget(f"{served['app'].mcp_url}/{server}".rstrip("/"), served["all"])


class Heard:
    """What one client heard, by kind: resource updates by URI, and list changes."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.lists: dict[str, int] = defaultdict(int)

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updates.append(message.params.uri)
        elif isinstance(message, LIST_CHANGES):
            self.lists[type(message).__name__] += 1


async def _until(condition, what: str) -> None:
    try:
        async with asyncio.timeout(WAIT):
            while not condition():
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"never heard: {what}") from None


def _held(client_result: types.CallToolResult) -> dict[str, int]:
    return json.loads(client_result.content[0].text)


# --- Released when a session ends -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("upstream", "prefix"), [("watched", "watched"), ("watched-stdio", "watched_stdio")])
def test_a_session_that_ends_without_unsubscribing_lets_go_upstream(served, upstream, prefix):
    async def subscribe_and_leave() -> dict[str, int]:
        async with _at(served).client(mode="legacy") as client:
            await client.subscribe_resource(f"{SCHEME}{upstream}/{ONE}")
            async with _at(served, upstream).client(mode="legacy") as there:
                await there.subscribe_resource(ONE)
                return _held(await client.call_tool(f"{prefix}__held", {}))
        # Both sessions end here without unsubscribing (the SDK's client deletes its session on the way out).

    while_held = asyncio.run(subscribe_and_leave())
    # On its own upstream sessions each client holds it once; on the shared child, the gateway holds it once.
    assert while_held == {ONE: 2 if upstream == "watched" else 1}

    async def held_now() -> dict[str, int]:
        async with _at(served).client() as client:
            return _held(await client.call_tool(f"{prefix}__held", {}))

    wait_until(lambda: asyncio.run(held_now()) == {}, seconds=WAIT, what="the upstream to hold nothing")


# --- Each client's updates, once, under the URI it subscribed with ------------------------------------------------


def test_each_2025_session_hears_its_updates_once_under_the_uri_it_subscribed_with(served):
    at_root, at_path, elsewhere = Heard(), Heard(), Heard()
    namespaced = f"{SCHEME}watched/{ONE}"

    async def scenario() -> None:
        async with (
            _at(served).client(mode="legacy", message_handler=at_root) as root,
            _at(served, "watched").client(mode="legacy", message_handler=at_path) as path,
            _at(served, "watched-stdio").client(mode="legacy", message_handler=elsewhere) as other,
        ):
            await root.subscribe_resource(namespaced)
            await path.subscribe_resource(ONE)
            await other.subscribe_resource(ONE)  # the same URI of another upstream
            await root.call_tool("watched__touch", {"uri": ONE})
            await _until(lambda: at_root.updates and at_path.updates, "watched's update")
            await other.call_tool("touch", {"uri": ONE})
            await _until(lambda: elsewhere.updates, "watched-stdio's update")
            await path.call_tool("touch", {"uri": ONE})  # whatever was still on its way has arrived after this
            await _until(lambda: len(at_root.updates) == len(at_path.updates) == 2, "watched's second update")
            for client, uri in ((root, namespaced), (path, ONE), (other, ONE)):
                await client.unsubscribe_resource(uri)

    asyncio.run(scenario())
    assert at_root.updates == [namespaced, namespaced]
    assert at_path.updates == [ONE, ONE]
    assert elsewhere.updates == [ONE]


def test_server_everythings_updates_reach_only_the_session_that_asked_for_them(served):
    """server-everything updates the subscriptions of the session that toggled its updates: through the gateway that
    is the client's own upstream session, so only that client hears them."""
    toggler, bystander = Heard(), Heard()
    namespaced = f"{SCHEME}everything-http/{TEXT}"

    async def scenario() -> None:
        async with (
            _at(served).client(mode="legacy", message_handler=toggler) as mine,
            _at(served, "everything-http").client(mode="legacy", message_handler=bystander) as theirs,
        ):
            await mine.subscribe_resource(namespaced)
            await theirs.subscribe_resource(TEXT)
            await mine.call_tool("everything_http__toggle-subscriber-updates", {})  # the first update comes at once
            try:
                await _until(lambda: toggler.updates, "the toggler's update")
                await theirs.call_tool("toggle-subscriber-updates", {})
                await _until(lambda: bystander.updates, "the bystander's own update")
            finally:
                await mine.call_tool("everything_http__toggle-subscriber-updates", {})
                await theirs.call_tool("toggle-subscriber-updates", {})

    asyncio.run(scenario())
    assert set(toggler.updates) == {namespaced}
    assert set(bystander.updates) == {TEXT}


def test_a_2026_upstreams_updates_reach_listen_streams_by_their_uris(served):
    """The gateway holds a listen stream to the 2026-07-28 upstream with the URIs its clients hold."""
    namespaced = f"{SCHEME}watched-modern/{ONE}"

    async def first(stream) -> object:
        async for event in stream:
            return event
        return None

    async def scenario() -> tuple[object, object]:
        async with (
            _at(served).client() as root,
            _at(served, "watched-modern").client() as path,
            root.listen(resource_subscriptions=[namespaced]) as at_root,
            path.listen(resource_subscriptions=[ONE]) as at_path,
        ):
            heard = [asyncio.create_task(first(at_root)), asyncio.create_task(first(at_path))]
            # The gateway reopens its stream to the upstream with the new URIs: touched until the change is heard.
            async with asyncio.timeout(WAIT):
                while not all(task.done() for task in heard):
                    await root.call_tool("watched_modern__touch", {"uri": ONE})
                    await asyncio.wait(heard, timeout=0.5)
            return heard[0].result(), heard[1].result()

    at_root, at_path = asyncio.run(scenario())
    assert getattr(at_root, "uri", None) == namespaced
    assert getattr(at_path, "uri", None) == ONE


# --- List changes ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("upstream", "prefix"), [("watched", "watched"), ("watched-modern", "watched_modern")])
def test_an_upstreams_list_changes_reach_mcp_and_its_own_path_not_another_upstreams(served, upstream, prefix):
    at_root, at_path, elsewhere, at_team = Heard(), Heard(), Heard(), Heard()
    other = "watched-stdio"

    async def scenario() -> None:
        async with (
            _at(served).client(mode="legacy", message_handler=at_root) as root,
            _at(served, upstream).client(mode="legacy", message_handler=at_path),
            _at(served, other).client(mode="legacy", message_handler=elsewhere) as there,
            _at(served, "team").client(mode="legacy", message_handler=at_team),
        ):
            await root.call_tool(f"{prefix}__relist", {})
            wanted = OFFERINGS_CHANGED
            await _until(lambda: wanted <= at_root.lists.keys() and wanted <= at_path.lists.keys(), "list changes")
            if upstream == "watched":  # the named server is composed of it
                await _until(lambda: wanted <= at_team.lists.keys(), "the named server's list changes")
            await there.call_tool("relist", {})  # the other upstream's own: heard at its path
            await _until(lambda: wanted <= elsewhere.lists.keys(), "the other upstream's list changes")

    asyncio.run(scenario())
    # Its own upstream's, once each (its one shared child told the gateway once): none of the first upstream's.
    assert dict(elsewhere.lists) == dict.fromkeys(OFFERINGS_CHANGED, 1)
    if upstream != "watched":  # nor of another upstream at a named server (it heard everything before this)
        assert not at_team.lists


def test_a_2026_listen_stream_hears_an_upstreams_list_changes(served):
    async def scenario() -> set[type]:
        heard: set[type] = set()
        async with (
            _at(served, "watched").client() as client,
            client.listen(resources_list_changed=True, prompts_list_changed=True) as stream,
        ):
            await client.call_tool("relist", {})
            async with asyncio.timeout(WAIT):
                async for event in stream:
                    heard.add(type(event).__name__)
                    if len(heard) == 2:
                        return heard
        return heard

    assert asyncio.run(scenario()) == {"ResourcesListChanged", "PromptsListChanged"}


def test_disabling_and_enabling_an_upstream_tells_clients_its_lists_changed(served):
    heard = Heard()
    wanted = {"ResourceListChangedNotification", "PromptListChangedNotification", "ToolListChangedNotification"}

    def enabled(on: bool) -> None:
        manage(
            served["env"],
            "shell",
            "-c",
            f"from errcatalog.gateway.models import Upstream; Upstream.objects.filter(name='watched-stdio')"
            f".update(enabled={on})",
        )

    async def scenario() -> tuple[set[str], set[str]]:
        async with _at(served).client(mode="legacy", message_handler=heard) as client:
            await client.list_resources()
            enabled(False)
            try:
                await _until(lambda: wanted <= heard.lists.keys(), "the lists of a disabled upstream")
                gone = {r.uri for r in (await client.list_resources()).resources}
                heard.lists.clear()
            finally:
                enabled(True)
            await _until(lambda: wanted <= heard.lists.keys(), "the lists of an upstream enabled again")
            back = {r.uri for r in (await client.list_resources()).resources}
        return gone, back

    gone, back = asyncio.run(scenario())
    assert f"{SCHEME}watched-stdio/{ONE}" not in gone
    assert f"{SCHEME}watched-stdio/{ONE}" in back


# --- A session that comes back ------------------------------------------------------------------------------------


# Last: it restarts the watched upstream.
def test_a_clients_subscriptions_are_held_again_when_its_upstream_session_comes_back(served):
    heard = Heard()
    namespaced = f"{SCHEME}watched/{ONE}"

    async def held(client) -> dict[str, int] | None:
        result = await client.call_tool("watched__held", {})
        return None if result.is_error else _held(result)  # the catalog's error while its session is broken

    async def scenario() -> list[dict[str, int] | None]:
        async with _at(served).client(mode="legacy", message_handler=heard) as client:
            await client.subscribe_resource(namespaced)
            before = await held(client)
            served["watched"].kill()
            served["watched"].start()  # a new process: every session and subscription it had is gone
            seen: list[dict[str, int] | None] = []
            try:
                async with asyncio.timeout(WAIT):
                    while not seen or seen[-1] != {ONE: 1}:
                        seen.append(await held(client))
            except TimeoutError:
                raise AssertionError(f"held again never: {seen[:3]} … {seen[-3:]}") from None
            await client.call_tool("watched__touch", {"uri": ONE})
            await _until(lambda: heard.updates, "the update after the upstream came back")
            return [before, *seen]

    seen = asyncio.run(scenario())
    assert seen[0] == {ONE: 1} and seen[-1] == {ONE: 1}
    assert None in seen  # its upstream session broke in between
    assert heard.updates == [namespaced]

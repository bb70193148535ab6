"""Progress and cancellation through the gateway, with unmodified npm ``server-everything`` behind it.

The upstream runs as its users run it, over stdio (a child of the served app) and over Streamable HTTP (its own
process); the served app is production's (``config.asgi``) in a subprocess; the client is the SDK's, in both protocol
generations. A client that asks for progress gets the upstream's notifications as a direct connection gives them; a
call the client cancels or abandons is cancelled upstream and frees its slot at once, so that a quick call after ten
abandoned long ones is answered.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.mcpserver.gateway.upstreams import everything_server, gateway_environment
from tests.support.mcp import McpTarget
from tests.support.served_app import ServedApp, manage, new_token
from tests.support.waiting import wait_until

LONG = "trigger-long-running-operation"
# Each upstream lets this many calls run at once; a call waits this long (for a slot, then for its answer): longer
# than the long calls take, so that a slot an abandoned call still held would hold it for all of their minute.
SLOTS = 2
TIMEOUT_SECONDS = 120
LONG_SECONDS = 60
# A quick call after the abandoned ones waits for a slot; held, the slots would free only after LONG_SECONDS.
QUICK_CALL_DEADLINE = 30
PREFIXES = ("everything", "everything_http")


@pytest.fixture(scope="module")
def served(tmp_path_factory, everything_http) -> Iterator[McpTarget]:
    folder = tmp_path_factory.mktemp("relays")
    env = gateway_environment(
        folder / "data",
    )
    node, script = everything_server()
    servers = {
        "mcpServers": {
            "everything": {"command": node, "args": [script, "stdio"]},
            "everything-http": {"type": "http", "url": everything_http.url},
        }
    }
    servers_file = folder / "mcp.json"
    servers_file.write_text(json.dumps(servers))
    manage(env, "catalog_import", str(servers_file))
    manage(
        env,
        "shell",
        "-c",
        "from errcatalog.gateway.models import Upstream; "
        f"Upstream.objects.update(max_concurrency={SLOTS}, timeout_seconds={TIMEOUT_SECONDS})",
    )
    key = new_token(env, "relays")
    app = ServedApp(env, folder).start()
    target = McpTarget(app.mcp_url, key)
    wait_until(
        lambda: {f"{prefix}__{LONG}" for prefix in PREFIXES} <= target.tool_names(),
        seconds=90,
        what="server-everything's tools",
    )
    yield target
    app.stop()


async def _with_progress(client: Client, name: str, arguments: dict) -> tuple[types.CallToolResult, list[tuple]]:
    seen: list[tuple] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    result = await client.call_tool(name, arguments, progress_callback=progress)
    return result, seen


async def _ignored(value: float, total: float | None, message: str | None) -> None:
    pass


def _direct_progress(arguments: dict) -> tuple[types.CallToolResult, list[tuple]]:
    async def call() -> tuple[types.CallToolResult, list[tuple]]:
        node, script = everything_server()
        async with Client(stdio_client(StdioServerParameters(command=node, args=[script, "stdio"]))) as client:
            return await _with_progress(client, LONG, arguments)

    return asyncio.run(call())


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_upstreams_progress_reaches_the_client_that_asked(served, prefix, mode):
    arguments = {"duration": 1, "steps": 4}
    direct_result, direct_progress = _direct_progress(arguments)
    assert len(direct_progress) == 4  # the upstream reports each step when asked

    async def call() -> tuple[types.CallToolResult, list[tuple]]:
        async with served.client(mode=mode) as client:
            return await _with_progress(client, f"{prefix}__{LONG}", arguments)

    result, progress = asyncio.run(call())
    assert not result.is_error, result
    assert result.content == direct_result.content
    assert progress == direct_progress


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_call_without_a_progress_token_gets_no_progress(served, prefix, mode):
    notifications: list[object] = []

    async def handler(message: object) -> None:
        if isinstance(message, types.ProgressNotification):
            notifications.append(message)

    async def call() -> types.CallToolResult:
        async with served.client(mode=mode, message_handler=handler) as client:
            return await client.call_tool(f"{prefix}__{LONG}", {"duration": 0.5, "steps": 2})

    assert not asyncio.run(call()).is_error
    assert notifications == []


@pytest.mark.parametrize("progress", [False, True], ids=["quiet", "progress"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("prefix", PREFIXES)
def test_abandoned_long_calls_free_their_slots_at_once(served, prefix, mode, progress):
    """Ten long calls, each on a connection of its own, abandoned after a second; then a quick call. With the slots
    still held, the quick call would wait for one until the long calls end, a minute later. A call that asked for
    progress is answered over a stream (SSE) in both generations; one that did not, as JSON in 2026-07-28."""

    async def long_call(started: asyncio.Event) -> None:
        async with served.client(mode=mode) as client:
            started.set()
            await client.call_tool(
                f"{prefix}__{LONG}",
                {"duration": LONG_SECONDS, "steps": LONG_SECONDS},
                progress_callback=_ignored if progress else None,
            )

    async def scenario() -> types.CallToolResult:
        events = [asyncio.Event() for _ in range(10)]
        tasks = [asyncio.create_task(long_call(event)) for event in events]
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in events)), 30)
        await asyncio.sleep(1)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        async with served.client(mode=mode) as client:
            return await asyncio.wait_for(
                client.call_tool(f"{prefix}__echo", {"message": "still served"}), QUICK_CALL_DEADLINE
            )

    result = asyncio.run(scenario())
    assert not result.is_error, result.content[0].text
    assert result.content[0].text == "Echo: still served"

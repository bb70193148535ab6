"""Each client session has upstream sessions of its own, and its own log level and log messages, through the gateway.

Production's served app (``config.asgi``) in a subprocess, with unmodified npm ``server-everything`` over Streamable
HTTP (its own process) and our SDK test upstream (hostile text) over HTTP and over stdio, shared and one child per
client session; the client is the SDK's, in both protocol generations where the protocol has the feature. At most
``SESSIONS`` upstream sessions per upstream and process, so that the bound is reached on purpose.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcpserver.gateway.upstream_server import SECRET
from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER, UpstreamProcess, gateway_environment
from tests.support.mcp import McpTarget
from tests.support.served_app import ServedApp, manage, new_token
from tests.support.waiting import wait_until

SESSIONS = 2
SESSION_ID = re.compile(r"session ([0-9a-f-]{8,})")
TOGGLE = "everything_http__toggle-simulated-logging"


@pytest.fixture(scope="module")
def hostile_http() -> Iterator[UpstreamProcess]:
    upstream = UpstreamProcess(UPSTREAM_SERVER, "http").start()
    yield upstream
    upstream.kill()


@pytest.fixture(scope="module")
def served(tmp_path_factory, everything_http, hostile_http) -> Iterator[McpTarget]:
    folder = tmp_path_factory.mktemp("sessions")
    env = gateway_environment(
        folder / "data",
        ERRCATALOG_GATEWAY_SESSIONS_PER_UPSTREAM=str(SESSIONS),
        ERRCATALOG_GATEWAY_ALLOW_PRIVATE="1",
    )
    servers = {
        "mcpServers": {
            "everything-http": {"type": "http", "url": everything_http.url},
            "hostile-http": {"type": "http", "url": hostile_http.url},
            "own": {"command": sys.executable, "args": [UPSTREAM_SERVER, "stdio"]},
            "shared": {"command": sys.executable, "args": [UPSTREAM_SERVER, "stdio"]},
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
        "Upstream.objects.filter(name='own').update(session_mode='per_client'); "
        "Upstream.objects.update(trusted=True)",
    )
    key = new_token(env, "sessions")
    app = ServedApp(env, folder).start()
    target = McpTarget(app.mcp_url, key)
    wanted = {TOGGLE, "hostile_http__log_hostile", "own__pid", "shared__pid", "own__die"}
    wait_until(lambda: wanted <= target.tool_names(), seconds=90, what="the upstreams' tools")
    yield target
    app.stop()


def _text(result: types.CallToolResult) -> str:
    return result.content[0].text


def _session_named(result: types.CallToolResult) -> str:
    found = SESSION_ID.search(_text(result))
    assert found, _text(result)
    return found.group(1)


def _direct_toggle(url: str) -> str:
    async def call() -> str:
        async with Client(streamable_http_client(url), mode="legacy") as client:
            first = _session_named(await client.call_tool("toggle-simulated-logging", {}))
            second = await client.call_tool("toggle-simulated-logging", {})  # stopped again
            assert _session_named(second) == first and _text(second).startswith("Stopped")
            return first

    return asyncio.run(call())


def test_two_client_sessions_see_two_upstream_sessions_each_kept_for_its_calls(served, everything_http):
    direct = _direct_toggle(everything_http.url)  # the upstream names the caller's session

    async def scenario() -> tuple[list[str], list[str]]:
        async with served.client(mode="legacy") as a, served.client(mode="legacy") as b:
            first = [await a.call_tool(TOGGLE, {}), await b.call_tool(TOGGLE, {})]
            again = [await a.call_tool(TOGGLE, {}), await b.call_tool(TOGGLE, {})]
        return [_text(r) for r in first], [_text(r) for r in again]

    first, again = asyncio.run(scenario())
    ids = [SESSION_ID.search(text).group(1) for text in first]
    assert all(text.startswith("Started") for text in first)  # each client's own: neither saw the other's toggle
    assert len(set(ids)) == 2 and direct not in ids
    assert [SESSION_ID.search(text).group(1) for text in again] == ids  # each kept its session for its next call
    assert all(text.startswith("Stopped") for text in again)


def test_a_2026_request_to_a_stateful_upstream_gets_a_session_of_its_own(served):
    async def scenario() -> list[str]:
        async with served.client() as client:
            assert client.protocol_version == "2026-07-28"
            return [_text(await client.call_tool(TOGGLE, {})) for _ in range(2)]

    texts = asyncio.run(scenario())
    assert all(text.startswith("Started") for text in texts)  # no state left by the first request reaches the second
    assert len({SESSION_ID.search(text).group(1) for text in texts}) == 2


def test_our_session_ending_closes_its_upstream_session(served, everything_http):
    async def scenario() -> str:
        async with served.client(mode="legacy") as client:
            return _session_named(await client.call_tool(TOGGLE, {}))
        # leaving the client deletes our session

    upstream_session = asyncio.run(scenario())
    wait_until(
        lambda: f"termination request for session {upstream_session}" in everything_http.log.read_text(),
        seconds=20,
        what="the upstream session's DELETE",
    )


def test_a_level_set_by_one_client_is_its_own_and_its_messages_reach_it_alone(served):
    """server-everything's simulated logging sends a message of a random level at once, then every 5 seconds, to the
    session that toggled it, respecting that session's level: A (debug) gets every one, B (emergency) only those."""

    async def scenario() -> tuple[list, list, str, str]:
        seen_a: list[types.LoggingMessageNotificationParams] = []
        seen_b: list[types.LoggingMessageNotificationParams] = []

        async def into(seen: list):
            async def collect(params: types.LoggingMessageNotificationParams) -> None:
                seen.append(params)

            return collect

        async with (
            served.client(mode="legacy", logging_callback=await into(seen_a)) as a,
            served.client(mode="legacy", logging_callback=await into(seen_b)) as b,
        ):
            await a.set_logging_level("debug")
            await b.set_logging_level("emergency")
            id_a = _session_named(await a.call_tool(TOGGLE, {}))
            id_b = _session_named(await b.call_tool(TOGGLE, {}))
            for _ in range(100):  # A's first message arrives at once, the next ones every 5 seconds
                if len(seen_a) >= 2:
                    break
                await asyncio.sleep(0.1)
            await a.call_tool(TOGGLE, {})
            await b.call_tool(TOGGLE, {})
        return seen_a, seen_b, id_a, id_b

    seen_a, seen_b, id_a, id_b = asyncio.run(scenario())
    assert seen_a, "A set debug and toggled: its messages reach it"
    assert all(id_a in m.data and id_b not in m.data for m in seen_a)
    assert all(m.logger == "everything-http" for m in seen_a)
    assert all(m.level == "emergency" and id_b in m.data for m in seen_b)  # B's level, not A's


@pytest.mark.parametrize("prefix", ["hostile_http", "own", "shared"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_log_messages_reach_the_client_at_its_level_cut_and_redacted_and_no_other(served, prefix, mode):
    async def scenario() -> tuple[list, list]:
        mine: list[types.LoggingMessageNotificationParams] = []
        others: list[types.LoggingMessageNotificationParams] = []

        async def collect_mine(params: types.LoggingMessageNotificationParams) -> None:
            mine.append(params)

        async def collect_others(params: types.LoggingMessageNotificationParams) -> None:
            others.append(params)

        # On 2026-07-28 a request opts in with its level (the SDK client stamps it on every request).
        options = {"log_level": "warning"} if mode == "auto" else {}
        async with (
            served.client(mode=mode, logging_callback=collect_mine, **options) as client,
            served.client(mode="legacy", logging_callback=collect_others) as other,
        ):
            if mode == "legacy":
                await client.set_logging_level("warning")
            await other.set_logging_level("debug")
            await other.call_tool(f"{prefix}__echo", {"text": "the other client has its own sessions"})
            result = await client.call_tool(f"{prefix}__log_hostile", {})
            assert not result.is_error, result
        return mine, others

    mine, others = asyncio.run(scenario())
    assert [m.level for m in mine] == ["warning", "error", "error"]  # below the client's level: not relayed
    assert others == []
    wire = json.dumps([m.model_dump(mode="json") for m in mine])
    assert SECRET not in wire and "hunter2" not in wire
    assert len(wire) < 40_000  # each text cut, the structure bounded (the upstream sent megabytes)
    assert mine[0].logger.startswith(f"{prefix.replace('_', '-')}/hostile-logger")
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in mine[0].data  # for people: the text itself, cut


def test_a_2026_client_that_takes_input_requests_gets_its_log_messages_too(served):
    # Such a client's calls go round trip by round trip (mcpserver.gateway.round_trip), with its level all the same.
    async def scenario() -> list:
        seen: list = []

        async def collect(params: types.LoggingMessageNotificationParams) -> None:
            seen.append(params)

        async def decline(context, params) -> types.ElicitResult:
            return types.ElicitResult(action="decline")

        async with served.client(logging_callback=collect, log_level="error", elicitation_callback=decline) as client:
            assert not (await client.call_tool("hostile_http__log_hostile", {})).is_error
        return seen

    assert [m.level for m in asyncio.run(scenario())] == ["error", "error"]


def test_a_2026_request_that_did_not_opt_in_gets_no_log_messages(served):
    async def scenario() -> list:
        seen: list = []

        async def collect(params: types.LoggingMessageNotificationParams) -> None:
            seen.append(params)

        async with served.client(logging_callback=collect) as client:
            assert not (await client.call_tool("hostile_http__log_hostile", {})).is_error
        return seen

    assert asyncio.run(scenario()) == []


def _pids(target: McpTarget, prefix: str, sessions: int, calls: int = 2) -> list[list[int]]:
    """Each of ``sessions`` 2025-11-25 sessions (open together) calls ``pid`` ``calls`` times."""

    async def scenario() -> list[list[int]]:
        async with contextlib.AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(target.client(mode="legacy")) for _ in range(sessions)]
            return [[int(_text(await c.call_tool(f"{prefix}__pid", {}))) for _ in range(calls)] for c in clients]

    return asyncio.run(scenario())


def test_a_per_client_stdio_upstream_runs_a_child_per_client_session_and_stops_it_with_the_session(served):
    own = _pids(served, "own", 2)
    shared = _pids(served, "shared", 2)
    assert own[0][0] == own[0][1] and own[1][0] == own[1][1]  # a session keeps its child
    assert own[0][0] != own[1][0]  # two sessions, two children
    assert shared[0][0] == shared[1][0]  # the default: one child for everyone
    assert shared[0][0] not in {own[0][0], own[1][0]}

    def stopped(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(lambda: stopped(own[0][0]) and stopped(own[1][0]), seconds=20, what="the sessions' children to stop")


def test_past_the_bound_an_idle_session_is_evicted_and_when_all_are_busy_a_call_is_refused_with_catalog_text(served):
    async def scenario() -> tuple[types.CallToolResult, int, int]:
        async with (
            served.client(mode="legacy") as a,
            served.client(mode="legacy") as b,
            served.client(mode="legacy") as c,
        ):
            first_a = int(_text(await a.call_tool("own__pid", {})))
            await b.call_tool("own__pid", {})
            # Both sessions of the bound are taken and idle: C's first call closes A's, the least recently used.
            await c.call_tool("own__pid", {})
            again_a = int(_text(await a.call_tool("own__pid", {})))  # A gets a new one (B's is evicted for it)
            # Now A and C hold the two, both busy for a while: B's call is refused, not served over a shared one.
            hanging = [asyncio.create_task(x.call_tool("own__hang", {"seconds": 30})) for x in (a, c)]
            await asyncio.sleep(1)
            refused = await b.call_tool("own__pid", {})
            for task in hanging:
                task.cancel()
            await asyncio.gather(*hanging, return_exceptions=True)
            return refused, first_a, again_a

    refused, first_a, again_a = asyncio.run(scenario())
    assert first_a != again_a
    assert refused.is_error
    assert refused.structured_content["code"] == "SERVICE_UNAVAILABLE"
    assert refused.structured_content["retryable"] is True


def test_an_upstream_that_dies_mid_session_is_answered_from_the_catalog_and_the_next_call_reconnects(served):
    async def scenario() -> tuple[int, types.CallToolResult, int]:
        async with served.client(mode="legacy") as client:
            before = int(_text(await client.call_tool("own__pid", {})))
            died = await client.call_tool("own__die", {})
            after = int(_text(await client.call_tool("own__pid", {})))
            return before, died, after

    before, died, after = asyncio.run(scenario())
    assert died.is_error
    assert died.structured_content["code"] == "NETWORK_ERROR"  # the catalog's text for a dropped connection
    assert "dying" not in died.model_dump_json() and SECRET not in died.model_dump_json()
    assert after != before  # its own session was replaced by a new child

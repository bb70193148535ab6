"""``MCP["SDK_FAST_PATHS"]`` off: every reach that has a plain path takes the SDK's, and the answers stay the same.

End to end, the served app (production's ``uvicorn config.asgi:application``) with an upstream over Streamable HTTP
is called in both protocol generations with the fast paths on, then again on the same database with them off.
In this process: the server built without our middleware and with the SDK's span middleware as it installs it, and
an upstream connection that opens no poster and calls through the SDK's client.
"""

from __future__ import annotations

import asyncio
import json
from types import MappingProxyType

import anyio
import mcp_types as types
import pytest
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.request_state import RequestStateBoundary

from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.changes import ChangeFeed
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.server import _named_server_instructions, build_server
from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER, UpstreamProcess
from tests.support.mcp import McpTarget
from tests.support.served_app import ServedApp, embedded_environment, manage, new_token

CALLS = {
    "success": ("explain_error", {"code": "TIMEOUT"}),
    "catalog error": ("explain_error", {}),
    "unknown tool": ("no_such_tool", {}),
    "upstream call": ("web__echo", {"text": "through the gateway"}),
    "upstream tool error": ("web__fail_coded", {}),
}
MODES = ("auto", "legacy")  # 2026-07-28, 2025-11-25


def _off(settings) -> None:
    settings.MCP = {**settings.MCP, "SDK_FAST_PATHS": False}


def test_without_the_fast_paths_the_server_keeps_the_sdks_middleware_as_it_is(settings):
    _off(settings)
    server, _reader = build_server(ChangeFeed())
    assert [type(m) for m in server.middleware[:2]] == [OpenTelemetryMiddleware, RequestStateBoundary]
    # Then only a middleware of the SDK's public kind (a named server's instructions), no reach into it.
    assert server.middleware[2:] == [_named_server_instructions]


def test_without_the_fast_paths_an_upstream_is_called_through_the_sdks_client(settings):
    _off(settings)
    upstream = UpstreamProcess(UPSTREAM_SERVER, "http").start()
    config = UpstreamConfig(
        name="web", prefix="web", transport="http", url=upstream.url, headers=MappingProxyType({}), command="",
        args=(), cwd="", env=MappingProxyType({}), timeout_seconds=5.0, max_concurrency=8, tools=None,
    )  # fmt: skip
    settings_ = MappingProxyType(
        {"BREAKER_FAILURES": 3, "BREAKER_SECONDS": 1, "TOOLS_REFRESH_SECONDS": 300, "RECONNECT_MIN_SECONDS": 0.05,
         "RECONNECT_MAX_SECONDS": 0.2, "STDIO_MAX_LIFETIME_SECONDS": 86400,
         "SESSIONS_PER_UPSTREAM": 100, "SESSION_IDLE_SECONDS": 300}
    )  # fmt: skip

    async def scenario():
        connection = UpstreamConnection(config, settings_, lambda: None)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            result = await connection.call("echo", {"text": "plain"})
            poster = connection._poster
            version = connection.protocol_version
            connection.stop()
        return result, poster, version

    try:
        result, poster, version = asyncio.run(scenario())
    finally:
        upstream.kill()
    assert version == "2026-07-28"
    assert poster is None
    assert result.content[0].text == "plain"


@pytest.fixture(scope="module")
def answers_both_ways(tmp_path_factory) -> dict[bool, dict[tuple[str, str], dict]]:
    upstream = UpstreamProcess(UPSTREAM_SERVER, "http", log=tmp_path_factory.mktemp("upstream") / "log").start()
    folder = tmp_path_factory.mktemp("fast-paths")
    env = embedded_environment(folder / "data", ERRCATALOG_MCP_TOOLSETS="catalog", ERRCATALOG_MCP_RATE_LIMIT="100000")
    servers = folder / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"web": {"type": "http", "url": upstream.url}}}))
    manage(env, "catalog_import", str(servers))
    key = new_token(env, "fast-paths")
    answers: dict[bool, dict[tuple[str, str], dict]] = {}
    try:
        for fast in (True, False):
            app = ServedApp({**env, "ERRCATALOG_MCP_SDK_FAST_PATHS": "1" if fast else "0"}, folder).start()
            try:
                answers[fast] = asyncio.run(_answers(McpTarget(app.mcp_url, key)))
            finally:
                app.stop()
    finally:
        upstream.kill()
    return answers


async def _answers(target: McpTarget) -> dict[tuple[str, str], dict]:
    async def listed() -> bool:
        async with target.client() as client:
            return "web__echo" in {tool.name for tool in (await client.list_tools()).tools}

    for _ in range(120):
        if await listed():
            break
        await asyncio.sleep(0.5)
    answers = {}
    for mode in MODES:
        async with target.client(mode=mode) as client:
            for kind, (name, arguments) in CALLS.items():
                result: types.CallToolResult = await client.call_tool(name, arguments)
                answers[(kind, mode)] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return answers


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(CALLS))
def test_the_plain_path_gives_the_same_answers(answers_both_ways, kind, mode):
    fast, plain = answers_both_ways[True][(kind, mode)], answers_both_ways[False][(kind, mode)]
    assert plain == fast
    assert fast.get("isError", False) is (kind not in ("success", "upstream call"))

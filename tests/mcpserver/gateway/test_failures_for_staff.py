"""What staff are told of an upstream's failure (its health's "last failure", the connection test) is fixed words,
never what the upstream sent: an upstream at an address staff chose cannot hand its answers back through them."""

from __future__ import annotations

from types import MappingProxyType

import anyio

from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.gateway.probe import probe
from tests.mcpserver.gateway.recorder import Recorder

SETTINGS = MappingProxyType(
    {
        "BREAKER_FAILURES": 3,
        "BREAKER_SECONDS": 1,
        "TOOLS_REFRESH_SECONDS": 300,
        "RECONNECT_MIN_SECONDS": 0.05,
        "RECONNECT_MAX_SECONDS": 0.2,
        "STDIO_MAX_LIFETIME_SECONDS": 86400,
        "SESSIONS_PER_UPSTREAM": 100,
        "SESSION_IDLE_SECONDS": 300,
    }
)


def _config(url: str) -> UpstreamConfig:
    return UpstreamConfig(
        name="web", prefix="web", transport="http", url=url, headers=MappingProxyType({}), command="", args=(),
        cwd="", env=MappingProxyType({}), timeout_seconds=2.0, max_concurrency=8, tools=None,
    )  # fmt: skip


def test_a_serving_connections_last_failure_says_what_failed_without_the_upstreams_words():
    async def scenario() -> str:
        connection = UpstreamConnection(_config(server.url), SETTINGS, lambda: None)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            while not connection.last_failure:
                await anyio.sleep(0.02)
            connection.stop()
        return connection.health().last_failure

    with Recorder() as server:
        shown = anyio.run(scenario)
        probed = anyio.run(probe, _config(server.url), SETTINGS)
    for text in (shown, probed.failure):
        assert text.startswith("ValidationError: an answer that is not valid MCP (")
        assert "IGNORE" not in text and "leaked" not in text and "input_value" not in text


def test_a_refused_connection_is_named_by_its_class():
    result = anyio.run(probe, _config("http://127.0.0.1:9/mcp"), SETTINGS)
    assert result.failure == "ConnectError: the connection failed"

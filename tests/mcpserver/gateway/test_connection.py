"""One upstream connection, driven directly: its circuit breaker and concurrency limit against a real upstream
server that the test kills and starts again."""

from __future__ import annotations

import sys
from types import MappingProxyType

import anyio
import pytest

from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.gateway.failures import UpstreamConnectionError, UpstreamUnavailable
from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER, UpstreamProcess

SETTINGS = MappingProxyType(
    {
        "BREAKER_FAILURES": 3,
        "BREAKER_SECONDS": 1,
        "TOOLS_REFRESH_SECONDS": 300,
        "RECONNECT_MIN_SECONDS": 0.05,
        "RECONNECT_MAX_SECONDS": 0.2,
        "STDIO_MAX_LIFETIME_SECONDS": 86400,
    }
)


def _config(url: str, **fields) -> UpstreamConfig:
    values = dict(
        name="web", prefix="web", transport="http", url=url, headers=MappingProxyType({}), command="", args=(),
        cwd="", env=MappingProxyType({}), timeout_seconds=5.0, max_concurrency=8, tools=None,
    )  # fmt: skip
    values.update(fields)
    return UpstreamConfig(**values)


@pytest.fixture
def upstream():
    server = UpstreamProcess(UPSTREAM_SERVER, "http").start()
    yield server
    server.kill()


def test_a_dead_upstream_opens_the_circuit_a_failed_probe_reopens_it_and_a_reconnection_closes_it(upstream):
    async def scenario() -> list[str]:
        seen = []
        connection = UpstreamConnection(_config(upstream.url), SETTINGS, lambda: None)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            assert (await connection.call("echo", {"text": "up"})).content[0].text == "up"
            upstream.kill()
            for _ in range(SETTINGS["BREAKER_FAILURES"]):
                with pytest.raises(UpstreamConnectionError):
                    await connection.call("echo", {"text": "down"})
            # Open: answered at once, with how long to wait.
            with pytest.raises(UpstreamUnavailable) as refused:
                await connection.call("echo", {"text": "down"})
            assert 1 <= refused.value.retry_after <= SETTINGS["BREAKER_SECONDS"]
            seen.append(connection.breaker.state)
            # After the window, one call goes through as a probe; still down, so the circuit opens again.
            await anyio.sleep(SETTINGS["BREAKER_SECONDS"])
            with pytest.raises(UpstreamConnectionError):
                await connection.call("echo", {"text": "probe"})
            seen.append(connection.breaker.state)
            # Back: the supervisor's reconnection closes the circuit at once, without waiting out the window.
            await anyio.to_thread.run_sync(upstream.start)
            while connection.state != "connected":
                await anyio.sleep(0.05)
            seen.append(connection.breaker.state)
            assert (await connection.call("echo", {"text": "back"})).content[0].text == "back"
            connection.stop()
        return seen

    assert anyio.run(scenario) == ["open", "open", "closed"]


def test_calls_beyond_the_concurrency_limit_wait_their_turn(upstream):
    async def scenario() -> int:
        most = 0
        connection = UpstreamConnection(_config(upstream.url, max_concurrency=2), SETTINGS, lambda: None)

        async def watch() -> None:
            nonlocal most
            while True:
                most = max(most, connection.in_flight)
                await anyio.sleep(0.005)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            tasks.start_soon(watch)
            async with anyio.create_task_group() as calls:
                for _ in range(6):
                    calls.start_soon(connection.call, "hang", {"seconds": 0.2})
            connection.stop()
            tasks.cancel_scope.cancel()
        return most

    assert anyio.run(scenario) == 2


def test_a_stdio_process_is_replaced_after_its_lifetime_without_cutting_a_call():
    config = _config("", transport="stdio", command=sys.executable, args=(UPSTREAM_SERVER, "stdio"))
    settings = MappingProxyType({**SETTINGS, "STDIO_MAX_LIFETIME_SECONDS": 1})

    async def scenario() -> tuple[str, str, str, str]:
        connection = UpstreamConnection(config, settings, lambda: None)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            first = (await connection.call("pid", {})).content[0].text
            # A call in flight when the lifetime ends finishes on the old process...
            late = (await connection.call("hang", {"seconds": 1.5})).content[0].text
            # ...which is then replaced by a new one.
            while True:
                second = (await connection.call("pid", {})).content[0].text
                if second != first:
                    break
                await anyio.sleep(0.1)
            connection.stop()
        return first, late, second, connection.state

    first, late, second, state = anyio.run(scenario)
    assert late == "late" and first != second and state == "stopped"

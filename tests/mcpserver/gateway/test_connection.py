"""One upstream connection, driven directly: its circuit breaker and concurrency limit against a real upstream
server that the test kills and starts again."""

from __future__ import annotations

import json
import os
import ssl
import sys
from contextlib import AsyncExitStack
from types import MappingProxyType

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.gateway import transport
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.gateway.failures import (
    UpstreamConnectionError,
    UpstreamJsonRpcError,
    UpstreamToolError,
    UpstreamUnavailable,
)
from mcpserver.gateway.transport import STDIO_PASSED_THROUGH_ENV, stdio_child_environment
from tests.mcpserver.gateway.upstream_server import SECRET
from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER, UpstreamProcess

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


def test_a_2026_upstreams_tool_changes_reach_the_gateway_from_its_stream(upstream):
    # The timer would re-read them in five minutes; the upstream's subscriptions/listen stream says so at once.
    changes = 0

    def changed() -> None:
        nonlocal changes
        changes += 1

    async def scenario() -> tuple[str, list[str]]:
        connection = UpstreamConnection(_config(upstream.url), SETTINGS, changed)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            await connection.call("echo", {"text": "up"})
            version = connection.protocol_version
            await connection.call("grow", {"name": "sprouted"})
            with anyio.fail_after(10):
                while "sprouted" not in connection.tools:
                    await anyio.sleep(0.02)
            grown = [(await connection.call("sprouted", {})).content[0].text]
            # Killed and started again: the new process serves its own tools, and the new session is followed too.
            upstream.kill()
            await anyio.to_thread.run_sync(upstream.start)
            with anyio.fail_after(20):
                while "sprouted" in connection.tools or connection.state != "connected":
                    await anyio.sleep(0.05)
            await connection.call("grow", {"name": "regrown"})
            with anyio.fail_after(10):
                while "regrown" not in connection.tools:
                    await anyio.sleep(0.02)
            grown.append((await connection.call("regrown", {})).content[0].text)
            connection.stop()
        return version, grown

    version, grown = anyio.run(scenario)
    assert version == "2026-07-28"
    assert grown == ["sprouted", "regrown"]
    assert changes == 4  # the first listing, the change, the new process's listing, its change


def test_an_upstream_without_a_stream_of_changes_is_served_on_its_timer(caplog):
    upstream = UpstreamProcess(UPSTREAM_SERVER, "http")
    upstream.env = {**os.environ, "UPSTREAM_WITHOUT_LISTEN": "1"}
    upstream.start()
    changes = 0

    def changed() -> None:
        nonlocal changes
        changes += 1

    async def scenario() -> tuple[str, float | None, float | None, list[str]]:
        connection = UpstreamConnection(_config(upstream.url), SETTINGS, changed)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            await connection.call("echo", {"text": "up"})
            connected_at = connection.connected_at
            answers = []
            for n in range(10):
                answers.append((await connection.call("echo", {"text": str(n)})).content[0].text)
                await anyio.sleep(0.05)
            still = connection.connected_at
            connection.stop()
        return connection.protocol_version, connected_at, still, answers

    try:
        with caplog.at_level("INFO", logger="mcpserver.gateway"):
            version, connected_at, still, answers = anyio.run(scenario)
    finally:
        upstream.kill()
    assert version == "2026-07-28"
    assert answers == [str(n) for n in range(10)]
    assert still == connected_at  # the refusal did not end the session
    assert changes == 1  # the first listing
    assert "Upstream web: no stream of tool changes (MCPError); re-read on the timer" in caplog.messages


@pytest.mark.parametrize("answers_as", ["http", "http-json"])
def test_a_2026_call_over_http_is_one_post_answered_as_the_sdks_client_answers_it(answers_as, monkeypatch):
    # ``mcpserver.sdk_internals.poster``: the SDK's client is not used for the call itself (it would fail here),
    # and what comes back is what the SDK's client gets from the same upstream, answered as SSE or as JSON.
    server = UpstreamProcess(UPSTREAM_SERVER, answers_as).start()
    calls = [("echo", {"text": "héllo"}), ("add", {"a": 2, "b": 40}), ("fail_hostile", {})]

    async def direct() -> list[types.CallToolResult]:
        async with Client(server.url) as client:
            await client.list_tools()
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    async def forwarded() -> tuple[list, UpstreamJsonRpcError]:
        connection = UpstreamConnection(_config(server.url), SETTINGS, lambda: None)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            while connection.state != "connected":
                await anyio.sleep(0.05)
            assert connection.protocol_version == "2026-07-28"

            async def not_this_way(*args, **kwargs):
                raise AssertionError("the SDK's client sent the call")

            monkeypatch.setattr(Client, "call_tool", not_this_way)
            results = []
            for name, arguments in calls:
                try:
                    results.append(await connection.call(name, arguments))
                except UpstreamToolError as exc:
                    results.append(exc)
            with pytest.raises(UpstreamJsonRpcError) as refused:
                await connection.call("fail_jsonrpc", {"code": -32602})
            connection.stop()
        return results, refused.value

    try:
        expected = anyio.run(direct)
        (echo, added, failed), refused = anyio.run(forwarded)
    finally:
        server.kill()
    assert echo.content == expected[0].content and echo.structured_content == expected[0].structured_content
    assert added.content == expected[1].content and json.loads(added.content[0].text) == {"sum": 42}
    assert isinstance(failed, UpstreamToolError) and expected[2].is_error
    assert "IGNORE ALL PREVIOUS" in failed.detail and SECRET not in failed.detail
    assert refused.jsonrpc_code == -32602


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD")


@pytest.mark.parametrize(
    ("environment", "url", "proxied"),
    [
        ({}, "http://upstream.example/mcp", False),
        ({"HTTP_PROXY": "http://proxy.example:3128"}, "http://upstream.example/mcp", True),
        ({"HTTP_PROXY": "http://proxy.example:3128"}, "https://upstream.example/mcp", False),
        ({"HTTPS_PROXY": "http://proxy.example:3128"}, "https://upstream.example/mcp", True),
        ({"ALL_PROXY": "http://proxy.example:3128"}, "https://upstream.example/mcp", True),
        (
            {"HTTP_PROXY": "http://proxy.example:3128", "NO_PROXY": "upstream.example"},
            "http://upstream.example/mcp",
            False,
        ),
        ({"HTTP_PROXY": "http://proxy.example:3128", "NO_PROXY": ".example"}, "http://upstream.example/mcp", False),
        ({"HTTP_PROXY": "http://proxy.example:3128", "NO_PROXY": "other.example"}, "http://upstream.example/mcp", True),
    ],
)
def test_the_environments_proxy_settings_decide_which_client_calls_an_upstream(monkeypatch, environment, url, proxied):
    # The gateway's own poster (aiohttp) ignores the environment; where a proxy applies, the SDK's httpx client,
    # which honours it, sends the calls too.
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert transport.proxied(url) is proxied


def test_a_stdio_child_gets_the_trust_store_and_proxy_variables_but_none_of_ours(monkeypatch):
    # Behind a TLS-inspecting proxy a `uvx` or `npx` server needs the machine's certificates and proxy to download
    # its package and reach its service; errcatalog's own settings and secrets stay in the web process.
    passed = {
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "SSL_CERT_DIR": "/etc/ssl/certs",
        "REQUESTS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt",
        "NODE_EXTRA_CA_CERTS": "/usr/local/share/ca-certificates/proxy.crt",
        "HTTPS_PROXY": "http://proxy.internal:3128",
        "NO_PROXY": "localhost,127.0.0.1",
    }
    kept = {"SECRET_KEY": "k", "DATABASE_URL": "postgres://u:p@db/x", "ERRCATALOG_MCP_AUTH": "1", "OTHER": "x"}
    for name in STDIO_PASSED_THROUGH_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in (passed | kept).items():
        monkeypatch.setenv(name, value)
    environment = stdio_child_environment({"NODE_EXTRA_CA_CERTS": "/record/ca.pem", "TOKEN": "t"})
    assert environment == passed | {"NODE_EXTRA_CA_CERTS": "/record/ca.pem", "TOKEN": "t"}  # the record's value wins


def test_the_values_sent_are_redacted_from_the_upstreams_words_where_they_may_be_secrets(monkeypatch):
    # Every value of a variable named for a secret, and any long value, is taken out of what the upstream says; a
    # short setting (a log level, a flag) is configuration, and the same word in the upstream's text is its meaning.
    monkeypatch.setenv("CONNECTION_TEST_LEVEL", "error")
    monkeypatch.setenv("CONNECTION_TEST_FLAG", "true")
    monkeypatch.setenv("CONNECTION_TEST_PIN", "4821")
    monkeypatch.setenv("CONNECTION_TEST_REGION", "eu-central-1-zone-b")
    env = {"LOG_LEVEL": "env:CONNECTION_TEST_LEVEL", "VERBOSE": "env:CONNECTION_TEST_FLAG",
           "API_PIN": "env:CONNECTION_TEST_PIN", "REGION": "env:CONNECTION_TEST_REGION"}  # fmt: skip
    config = _config("", transport="stdio", command=sys.executable, args=(UPSTREAM_SERVER, "stdio"),
                     env=MappingProxyType(env))  # fmt: skip
    said = "This error often occurs: expected true or false, PIN 4821 in region eu-central-1-zone-b"

    async def scenario() -> UpstreamToolError:
        connection = UpstreamConnection(config, SETTINGS, lambda: None)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            with pytest.raises(UpstreamToolError) as failed:
                await connection.call("fail_with", {"text": said})
            connection.stop()
        return failed.value

    failure = anyio.run(scenario)
    assert failure.failure_text.endswith(
        "This error often occurs: expected true or false, PIN [REDACTED] in region [REDACTED]"
    )


def test_every_http_client_of_every_upstream_verifies_with_one_trust_store_built_once():
    async def tls_of(url: str):
        async with AsyncExitStack() as stack:
            return (await transport.http_transport(stack, _config(url), {}))[1]

    first = anyio.run(tls_of, "http://127.0.0.1:9/mcp")
    # Another client's own session of it, and another upstream: the same store, not one loaded again for each.
    assert anyio.run(tls_of, "http://127.0.0.1:9/mcp") is first
    assert anyio.run(tls_of, "https://upstream.example/mcp") is first
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname

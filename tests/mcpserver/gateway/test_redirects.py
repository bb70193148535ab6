"""An upstream's redirect is never followed: a call's arguments and the configured headers go only to the upstream's
own address, on both of the gateway's HTTP clients (the SDK's httpx client, and the aiohttp session that posts
2026-07-28 calls)."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import anyio
import pytest

from errcatalog.gateway.secrets import seal
from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.gateway.failures import UpstreamHttpError
from tests.mcpserver.gateway.recorder import Recorder
from tests.mcpserver.gateway.upstreams import HERE, UpstreamProcess

REDIRECT_SERVER = str(HERE / "redirect_server.py")
API_KEY = "the-configured-api-key-0123456789"
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
    config = UpstreamConfig(
        name="web", prefix="web", transport="http", url=url, headers=MappingProxyType({}), command="", args=(),
        cwd="", env=MappingProxyType({}), timeout_seconds=5.0, max_concurrency=8, tools=None,
    )  # fmt: skip
    headers = {"X-Api-Key": seal(API_KEY, binding=config.binding)}
    return dataclasses.replace(config, headers=MappingProxyType(headers))


@pytest.mark.parametrize("generation", ["legacy", "modern"])
def test_an_upstreams_redirect_is_refused_and_nothing_reaches_the_address_it_names(generation):
    with Recorder() as elsewhere:
        upstream = UpstreamProcess(REDIRECT_SERVER, generation, elsewhere.url).start()
        try:

            async def scenario() -> UpstreamHttpError:
                connection = UpstreamConnection(_config(upstream.url), SETTINGS, lambda: None)
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(connection.run)
                    try:
                        with pytest.raises(UpstreamHttpError) as refused:
                            await connection.call("go", {"text": "the-call-arguments"})
                    finally:
                        connection.stop()
                return refused.value

            refusal = anyio.run(scenario)
        finally:
            upstream.kill()
    assert refusal.status_code == 307
    assert elsewhere.received == []

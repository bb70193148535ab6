"""A client that signed in with OAuth calls an upstream through the gateway: the upstream gets its own configured
credentials, never the client's token (MCP authorization forbids passing a token through to another resource).

Production's served app in a subprocess, the SDK's OAuth client with login and consent over HTTP, and an upstream
that says which headers each call arrived with.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcpserver.gateway.upstreams import UpstreamProcess, gateway_environment
from tests.support.mcp import McpTarget
from tests.support.oauth_flow import MemoryStorage, Person, oauth_client, oauth_provider
from tests.support.served_app import ServedApp, manage, new_token
from tests.support.waiting import wait_until

HEADER_SERVER = str(Path(__file__).with_name("header_server.py"))
UPSTREAM_KEY = "upstream-own-key-0123456789"
PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[ServedApp]:
    upstream = UpstreamProcess(HEADER_SERVER, "http").start()
    folder = tmp_path_factory.mktemp("oauth-upstream")
    env = gateway_environment(folder / "data", ERRCATALOG_GATEWAY_ALLOW_PRIVATE="1")
    servers = {
        "mcpServers": {"echo": {"type": "http", "url": upstream.url, "headers": {"X-Upstream-Key": UPSTREAM_KEY}}}
    }
    servers_file = folder / "mcp.json"
    servers_file.write_text(json.dumps(servers))
    manage(env, "catalog_import", str(servers_file))
    manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; from errcatalog.gateway.models import Upstream; "
        f"get_user_model().objects.create_user(username='ada', password={PASSWORD!r}); "
        "Upstream.objects.update(trusted=True)",
    )
    app = ServedApp(env, folder).start()
    yield app
    app.stop()
    upstream.kill()


def test_the_upstream_gets_its_own_credentials_and_never_the_clients_token(served):
    storage = MemoryStorage()

    async def scenario() -> dict:
        provider = oauth_provider(served.mcp_url, Person("ada", PASSWORD), storage=storage)
        async with oauth_client(served.mcp_url, provider) as client:
            result = await client.call_tool("echo__headers", {})
            assert not result.is_error, result
            return json.loads(result.content[0].text)

    # The upstream's tools are read in the background: wait for them with a static key, so the OAuth client's one
    # call finds them.
    lister = McpTarget(served.mcp_url, new_token(served.env, "lister"))
    wait_until(lambda: "echo__headers" in lister.tool_names(), seconds=60, what="the upstream's tools")
    received = asyncio.run(scenario())
    token = storage.tokens.access_token
    assert received["x-upstream-key"] == UPSTREAM_KEY
    assert "authorization" not in received
    assert token not in json.dumps(received)

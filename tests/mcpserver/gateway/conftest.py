"""Fixtures the gateway's test modules share."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator

import pytest

from tests.mcpserver.gateway.upstreams import (
    UPSTREAM_SERVER,
    WATCHED_SERVER,
    UpstreamProcess,
    everything_server,
    gateway_environment,
)
from tests.support.gateway import NAMED_SERVERS
from tests.support.mcp import McpTarget
from tests.support.served_app import ServedApp, embedded_environment, manage, new_token
from tests.support.waiting import wait_until


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory) -> Iterator[UpstreamProcess]:
    """npm's server-everything over Streamable HTTP, in a process of its own for the module that asks for it."""
    log = tmp_path_factory.mktemp("everything") / "log"
    upstream = UpstreamProcess.command_line([*everything_server(), "streamableHttp"], log=log).start()
    yield upstream
    upstream.kill()


# The tokens the served app's tests use, by name: (servers, tool scope, metrics), made in one process (a Django start
# each costs).
TOKENS = {
    "all": ([], [], False),
    "metrics": ([], [], True),
    "web_only": (["web"], [], False),
    "root_only": ([""], [], False),
    "echo_only": ([], ["web__echo"], False),
    "support_only": (["support"], [], False),
}
SETUP = """
import json
from django.contrib.auth.models import User
from errcatalog.access.tokens import client_token_create
from errcatalog.gateway.models import Upstream
from errcatalog.gateway.named_servers import named_server_create
from errcatalog.gateway.services import upstream_update

upstream_update(actor=None, upstream=Upstream.objects.get(name="off"), enabled=False)
for name, (description, tools, upstreams) in NAMED_SERVERS.items():
    named_server_create(actor=None, name=name, description=description, tools=tools, enabled=name != "paused",
                        upstreams=upstreams)
user, _ = User.objects.get_or_create(username="agent-owner")
keys = {
    name: client_token_create(user=user, name=name, servers=servers, tool_scope=scope, can_read_metrics=metrics)[1]
    for name, (servers, scope, metrics) in TOKENS.items()
}
print(json.dumps(keys))
"""


@pytest.fixture(scope="package")
def virtual_served(tmp_path_factory) -> Iterator[dict]:
    """Production's app (``uvicorn config.asgi:application`` in a subprocess, the embedded SQLite default) with
    upstreams imported as an operator imports them: ``upstream_server.py`` over Streamable HTTP (``web``) and over
    stdio (``local``), and ``off``, imported and then disabled; the named servers of ``NAMED_SERVERS``; the tokens of
    ``TOKENS`` (their keys by name). Shared by the modules of virtual and named servers (a start costs seconds), which
    run one after the other, and stopped with this package's tests; they change nothing in it but what a test makes
    for itself."""
    folder = tmp_path_factory.mktemp("virtual")
    upstream = UpstreamProcess(UPSTREAM_SERVER, "http", log=folder / "upstream.log").start()
    env = embedded_environment(folder / "data", ERRCATALOG_MCP_TOOLSETS="catalog", ERRCATALOG_MCP_RATE_LIMIT="1000000")
    servers = {
        "mcpServers": {
            "web": {"type": "http", "url": upstream.url},
            "local": {"command": sys.executable, "args": [UPSTREAM_SERVER, "stdio"]},
            "off": {"type": "http", "url": upstream.url},
        }
    }
    servers_file = folder / "mcp.json"
    servers_file.write_text(json.dumps(servers))
    manage(env, "upstream_import", str(servers_file))
    # "off" is imported, then disabled as staff would.
    setup = f"TOKENS = {TOKENS!r}\nNAMED_SERVERS = {NAMED_SERVERS!r}\n{SETUP}"
    tokens = json.loads(manage(env, "shell", "--no-imports", "-c", setup).strip().splitlines()[-1])
    key = tokens["all"]
    app = ServedApp(env, folder).start()

    async def listed() -> set[str]:
        async with McpTarget(app.mcp_url, key).client() as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    wait_until(lambda: {"web__echo", "local__echo"} <= asyncio.run(listed()), seconds=60, what="their tools")
    yield {"app": app, "upstream": upstream, "env": env, **tokens}
    app.stop()
    upstream.kill()


# The tokens of ``offerings_app``: (servers, tool scope, may read the catalog).
OFFERINGS_TOKENS = {
    "all": ([], [], True),
    "blind": ([], [], False),  # may not read the catalog's resources and prompts
    "scoped": ([], ["everything__echo"], True),  # a tool scope naming one upstream's tool
    "everything_only": (["everything"], [], True),  # may use /mcp/everything alone
}
_TOKENS_SETUP = """
import json
from django.contrib.auth.models import User
from errcatalog.access.tokens import client_token_create

user, _ = User.objects.get_or_create(username="agent-owner")
keys = {
    name: client_token_create(user=user, name=name, servers=servers, tool_scope=scope, can_read_catalog=reads)[1]
    for name, (servers, scope, reads) in TOKENS.items()
}
print(json.dumps(keys))
"""


@pytest.fixture(scope="package")
def offerings_app(tmp_path_factory) -> Iterator[dict]:
    """Production's served app in front of upstreams with resources and prompts, for the offerings' test modules:
    npm's server-everything over stdio (``everything``) and Streamable HTTP (``everything-http``); our SDK test
    upstream over HTTP (``web``: hostile failures, metadata the screen flags); ``watched_server.py`` over HTTP
    (``watched``: 2025-11-25, a session of its own per client), over stdio (``watched-stdio``: one shared child) and
    over HTTP in 2026-07-28 (``watched-modern``). Shared by the offerings' and the subscriptions' modules, and
    stopped with this package's tests. Yields the app, the upstream processes and a key per token."""
    folder = tmp_path_factory.mktemp("offerings")
    everything = UpstreamProcess.command_line([*everything_server(), "streamableHttp"], log=folder / "ev.log")
    hostile = UpstreamProcess(UPSTREAM_SERVER, "http", log=folder / "upstream.log")
    watched = UpstreamProcess(WATCHED_SERVER, "http", log=folder / "watched.log")
    modern = UpstreamProcess(WATCHED_SERVER, "http-modern", log=folder / "modern.log")
    processes = [everything, hostile, watched, modern]
    for process in processes:
        process.start()
    env = gateway_environment(
        folder / "data",
    )
    node, script = everything_server()
    servers = {
        "mcpServers": {
            "everything": {"command": node, "args": [script, "stdio"]},
            "everything-http": {"type": "http", "url": everything.url},
            "web": {"type": "http", "url": hostile.url},
            "watched": {"type": "http", "url": watched.url},
            "watched-stdio": {"command": sys.executable, "args": [WATCHED_SERVER, "stdio"]},
            "watched-modern": {"type": "http", "url": modern.url},
        }
    }
    (folder / "mcp.json").write_text(json.dumps(servers))
    manage(env, "upstream_import", str(folder / "mcp.json"))
    setup = f"TOKENS = {OFFERINGS_TOKENS!r}\n{_TOKENS_SETUP}"
    tokens = json.loads(manage(env, "shell", "--no-imports", "-c", setup).splitlines()[-1])
    app = ServedApp(env, folder).start()
    target = McpTarget(app.mcp_url, tokens["all"])
    wanted = {
        "everything__echo",
        "everything_http__echo",
        "web__echo",
        "watched__touch",
        "watched_stdio__touch",
        "watched_modern__touch",
    }
    wait_until(lambda: wanted <= target.tool_names(), seconds=90, what="the upstreams' tools")
    metrics = new_token(env, "prometheus", metrics=True)
    yield {"app": app, "env": env, "hostile": hostile, "watched": watched, "metrics": metrics, **tokens}
    app.stop()
    for process in processes:
        process.kill()

"""The real endpoint for MCP tests: config.asgi.application under uvicorn on a free 127.0.0.1 port (a pytest plugin,
named in ``tests/conftest.py``'s ``pytest_plugins``, so every folder of tests has its fixtures).

The server runs in a thread of the test process for the whole session. Tests that call it use
``@pytest.mark.django_db(transaction=True)``: their rows are committed, so the server thread's own database
connection sees them (an in-memory SQLite test database is shared between threads; PostgreSQL just works).
Tools that fail or elicit on purpose are registered here in the toolset "test", switched on for the session
with the demo tool set (demo/mcp_tools.py).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator

import pytest
import uvicorn
from django.conf import settings
from django.db import connection

from errcatalog.errors import ApiNotFoundError, ApiServerError
from mcpserver.registry import ToolOutput, tool
from tests.support.mcp import SERVED_TOOLSETS, McpTarget

# --- Test-only tools (toolset "test") ------------------------------------------------------------------------


@tool(
    toolset="test",
    description="Fetch a report from an upstream that answers 502.",
    input_schema={"type": "object", "properties": {}},
)
def upstream_broken() -> str:
    raise ApiServerError(502, "upstream said: <html>secret stack trace</html>")


@tool(
    toolset="test",
    description="Look up a record that does not exist upstream.",
    input_schema={"type": "object", "properties": {}},
)
def record_missing() -> str:
    raise ApiNotFoundError(404, "no such record: user-supplied-id-123")


@tool(
    toolset="test",
    description="Book a table; asks for missing details.",
    input_schema={
        "type": "object",
        "properties": {
            "guest": {"type": "string", "description": "The guest's name"},
            "email": {"type": "string", "format": "email", "description": "Where to send the confirmation"},
            "people": {"type": "integer", "minimum": 1, "maximum": 12, "description": "How many people"},
        },
        "required": ["guest", "email", "people"],
    },
    elicit=True,
    formats=True,
)
def book_table(guest: str, email: str, people: int) -> dict:
    return {"booked": True, "guest": guest, "email": email, "people": people}


@tool(
    toolset="test",
    description="Greet a guest in words the client's model chooses; asks for the guest's name when it is missing.",
    input_schema={
        "type": "object",
        "properties": {"guest": {"type": "string", "description": "The guest's name"}},
        "required": ["guest"],
    },
    elicit=True,
)
async def greet_guest(guest: str, context) -> str:
    return await context.sample(f"Greet {guest}", max_tokens=20)


@tool(
    toolset="test",
    description="Log in to a service; the password is never asked for in a form.",
    input_schema={
        "type": "object",
        "properties": {
            "user": {"type": "string"},
            "password": {"type": "string", "format": "password", "writeOnly": True},
        },
        "required": ["user", "password"],
    },
    elicit=True,
)
def service_login(user: str, password: str) -> str:
    return "logged in"


@tool(
    toolset="test",
    description="Say who is calling, logging and reporting progress on the way.",
    input_schema={"type": "object", "properties": {}},
)
async def whoami(context) -> dict:
    await context.log("info", "looking up the caller")
    await context.progress(1, 1, "done")
    return {"client": context.client, "session": context.session_id is not None}


@tool(
    toolset="test",
    description="Return a content block no MCP client understands.",
    input_schema={"type": "object", "properties": {}},
)
def broken_output() -> ToolOutput:
    return ToolOutput(content=[{"type": "hologram", "data": 1}])


# --- The server ----------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def mcp_url(django_db_setup, django_db_blocker) -> AsyncIterator[str]:
    original = settings.MCP
    settings.MCP = {**original, "TOOLSETS": SERVED_TOOLSETS}
    # The server's worker threads close their connections after each call, so the test database can be dropped.
    max_age = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = 0
    import config.asgi

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(config.asgi.application, host="127.0.0.1", port=port, lifespan="on", log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="mcp-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    # The endpoint loads the catalog as it starts (of the empty test database; tests load their own).
    with django_db_blocker.unblock():
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("The test MCP server did not start.")
            time.sleep(0.01)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=10)
    settings.MCP = original
    connection.settings_dict["CONN_MAX_AGE"] = max_age


@pytest.fixture
def catalog(transactional_db):
    """The default catalog in the database (transactional tests start from an empty one)."""
    from django.core.cache import cache

    from errcatalog.catalog.defaults import catalog_load_defaults
    from errcatalog.catalog.snapshot import catalog_changed

    # Token ids repeat after each flush (SQLite), so per-token rate-limit counters must not outlive a test.
    cache.clear()
    catalog_load_defaults(reset=False)
    catalog_changed()


@pytest.fixture
def token_owner(transactional_db, django_user_model):
    return django_user_model.objects.create_user(username="agent-owner", password="pw")


@pytest.fixture
def api_key(token_owner, catalog) -> str:
    from errcatalog.access.tokens import client_token_create

    return client_token_create(user=token_owner, name="tests")[1]


@pytest.fixture
def mcp(mcp_url, api_key, settings):
    """The endpoint with a fresh token: ``mcp.run(scenario)`` in both generations, ``mcp.client()``, ``mcp.raw()``."""
    settings.MCP = {**settings.MCP, "TOOLSETS": SERVED_TOOLSETS}
    return McpTarget(mcp_url, api_key)

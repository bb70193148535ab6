"""What the seed modules share: the real MCP endpoint (tests/mcpserver's fixtures), a REST client with a token,
tools that fail the way each seed's examples fail (toolset "test", served by the endpoint fixture), and a writer's
edits to the catalog made through the catalog's write paths, as admin, the REST API and import make them.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp.shared.exceptions import MCPError

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.models import ErrorCode
from errcatalog.catalog.services import error_code_update
from errcatalog.catalog.snapshot import catalog_changed
from errcatalog.errors import ApiAuthenticationError, ApiClientError, ApiNotFoundError, ApiServerError
from mcpserver.registry import tool
from tests.errcatalog.web.api.conftest import bearer_client
from tests.mcpserver.conftest import McpTarget, api_key, catalog, mcp, mcp_url, token_owner  # noqa: F401 (fixtures)

PROTOCOLS = ("2026-07-28", "2025-11-25")


@tool(
    toolset="test", description="Fetch patterns; the request times out.", input_schema={"type": "object"}, formats=True
)
def seed000_timeout() -> str:
    raise TimeoutError("read timed out after 10.0s on 10.0.1.5:443")


@tool(toolset="test", description="Fetch patterns without a valid key.", input_schema={"type": "object"}, formats=True)
def seed000_unauthorized() -> str:
    raise ApiAuthenticationError(401, "upstream: Missing or invalid API key")


@tool(toolset="test", description="Fetch patterns; the server fails.", input_schema={"type": "object"}, formats=True)
def seed000_server_error() -> str:
    raise ApiServerError(500, "upstream: Database connection failed")


@tool(toolset="test", description="Fetch patterns with a bad limit.", input_schema={"type": "object"}, formats=True)
def seed000_bad_request() -> str:
    raise ApiClientError(400, "upstream: limit must be between 1 and 100")


@tool(toolset="test", description="Fetch a missing resource.", input_schema={"type": "object"}, formats=True)
def seed000_not_found() -> str:
    raise ApiNotFoundError(404, "upstream: /api/patterns/invalid-resource")


@tool(toolset="test", description="Fails unexpectedly.", input_schema={"type": "object"}, formats=True)
def seed000_unknown() -> str:
    raise RuntimeError("KeyError('x') in handler")


@pytest.fixture
def rest(catalog, django_user_model):  # noqa: F811 (the fixture imported above)
    """A REST client with a client token of a staff user (the render, classify and outcomes endpoints need one)."""
    user = django_user_model.objects.create_user(username="seed-reader", password="pw", is_staff=True)
    # It reports outcomes too (seed 003's retry loop, through the outcomes API).
    return bearer_client(client_token_create(user=user, name="seed-reader", can_report_outcomes=True)[1])


def post(rest, path: str, **body) -> dict:
    response = rest.post(path, body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def rest_render(client, **body) -> dict:
    """POST /api/v1/render/ and return its body."""
    return post(client, "/api/v1/render/", **body)


def seed_catalog(document: dict) -> None:
    """Put a writer's catalog (seed wording typed in) into the database, over the default one."""
    from errcatalog.catalog.services import catalog_import

    catalog_import({"format": "errcatalog/v1", **document})
    catalog_changed()


def write_questions(questions: dict[str, str]) -> None:
    """A writer replaces the default variant's question of each code (what admin's change form does)."""
    for code, question in questions.items():
        error_code_update(
            error_code=ErrorCode.objects.get(code=code),
            variants=[{"name": "default", "locale": "", "question": question}],
        )
    catalog_changed()


def jsonrpc_errors(mcp, tool: str, arguments: dict) -> dict[str, MCPError]:  # noqa: F811
    """The JSON-RPC error of one call, in both protocol generations (the SDK's real client over HTTP)."""

    async def scenario(client):
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError as error:
            return error
        raise AssertionError(f"{tool} answered with a result: {result}")

    errors = mcp.run(scenario)
    assert set(errors) == set(PROTOCOLS)
    return errors


def jsonrpc_error(mcp, tool: str, arguments: dict) -> MCPError:  # noqa: F811
    """The error of one call; both protocol generations must answer the same code, message and data."""
    modern, legacy = (jsonrpc_errors(mcp, tool, arguments)[p] for p in PROTOCOLS)
    assert (modern.code, modern.message, modern.data) == (legacy.code, legacy.message, legacy.data)
    return modern


def tool_result(mcp, tool: str, arguments: dict):  # noqa: F811
    async def scenario():
        async with mcp.client() as client:
            return await client.call_tool(tool, arguments)

    return asyncio.run(scenario())

"""What the seed documents' examples are rebuilt with: REST calls, a seed's catalog, MCP calls of the test tools."""

from __future__ import annotations

import asyncio

from mcp.shared.exceptions import MCPError

from errcatalog.catalog.models import ErrorCode
from errcatalog.catalog.services import error_code_update
from errcatalog.catalog.snapshot import catalog_changed

# Both protocol generations, each answering a seed's call.
PROTOCOLS = ("2026-07-28", "2025-11-25")


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


def jsonrpc_errors(mcp, tool: str, arguments: dict) -> dict[str, MCPError]:
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


def jsonrpc_error(mcp, tool: str, arguments: dict) -> MCPError:
    """The error of one call; both protocol generations must answer the same code, message and data."""
    modern, legacy = (jsonrpc_errors(mcp, tool, arguments)[p] for p in PROTOCOLS)
    assert (modern.code, modern.message, modern.data) == (legacy.code, legacy.message, legacy.data)
    return modern


def tool_result(mcp, tool: str, arguments: dict):
    async def scenario():
        async with mcp.client() as client:
            return await client.call_tool(tool, arguments)

    return asyncio.run(scenario())

"""What the seed modules share: the real MCP endpoint (``tests.support.mcp_endpoint``'s fixtures), a REST client with
a token, tools that fail the way each seed's examples fail (toolset "test", served by the endpoint fixture), and a
writer's edits to the catalog made through the catalog's write paths, as admin, the REST API and import make them.
"""

from __future__ import annotations

import pytest

from errcatalog.access.tokens import client_token_create
from errcatalog.errors import ApiAuthenticationError, ApiClientError, ApiNotFoundError, ApiServerError
from mcpserver.registry import tool
from tests.support.api import bearer_client


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
def rest(catalog, django_user_model):
    """A REST client with a client token of a staff user (the render, classify and outcomes endpoints need one)."""
    user = django_user_model.objects.create_user(username="seed-reader", password="pw", is_staff=True)
    # It reports outcomes too (seed 003's retry loop, through the outcomes API).
    return bearer_client(client_token_create(user=user, name="seed-reader", can_report_outcomes=True)[1])

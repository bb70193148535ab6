"""The demo tools are served by the MCP endpoint: its fixtures (a served app, a token, the SDK's client) apply here."""

from tests.mcpserver.conftest import api_key, catalog, mcp, mcp_url, token_owner  # noqa: F401 (fixtures)

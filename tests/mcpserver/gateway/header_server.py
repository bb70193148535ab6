"""An upstream that says which HTTP headers each of its tool calls arrived with: ``python header_server.py http PORT``.

For the tests that show what the gateway sends an upstream, and what it never sends (a client's own credentials).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("header-upstream", log_level="CRITICAL")


@server.tool()
def headers(ctx: Context) -> dict:
    """The HTTP headers this call arrived with."""
    request = ctx.request_context.request
    return dict(request.headers) if request is not None else {}


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="critical")

"""The reference for ``bench/mcp_bench.py``: a bare SDK ``MCPServer`` with the benchmark's three tools.

``progress_app`` is a second server for ``bench/gateway_bench.py``'s progress relay: its ``count`` reports
progress ``n`` times, over SSE (a JSON response has nowhere to put a notification).

Served by uvicorn (``bench.bare_server:app``) with the same command line as our endpoint, in the transport
configuration our endpoint uses for 2026-07-28 requests: JSON responses, stateless, DNS-rebinding protection
with the same allow-lists, the same body size limit. ``BENCH_BARE_LOG_LEVEL`` is the ``MCPServer`` log level
(the SDK default, INFO, logs every failed call).
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

server = MCPServer("bare", log_level=os.environ.get("BENCH_BARE_LOG_LEVEL", "INFO"))


@server.tool(description="Return the text.")
def echo(text: str) -> str:
    return text


@server.tool(description="Fail as if the upstream service answered 502.")
def fail_upstream() -> str:
    raise ToolError("upstream answered 502")


@server.tool(description="Return the query; called without it, the caller gets the SDK's validation error.")
def needs_input(query: str) -> str:
    return query


app = server.streamable_http_app(
    streamable_http_path="/mcp",
    json_response=True,
    stateless_http=True,
    max_request_body_size=1024 * 1024,
    transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    ),
)


progress_server = MCPServer("bare-progress", log_level=os.environ.get("BENCH_BARE_LOG_LEVEL", "INFO"))


@progress_server.tool(description="Report progress n times, then return n.")
async def count(n: int, ctx: Context) -> int:
    for step in range(n):
        await ctx.report_progress(step + 1, n, "counting")
    return n


progress_app = progress_server.streamable_http_app(
    streamable_http_path="/mcp",
    stateless_http=True,
    transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    ),
)

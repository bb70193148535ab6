"""A plain forwarding proxy, the corpus's comparison: ``forwarding_proxy.py COMMAND [ARGS...]`` serves over stdio the
tools of the server that command starts over stdio, and passes every call and every answer through unchanged, a
tool's error result and a JSON-RPC error's code and message included.

It is what a gateway that forwards the upstream's words does (FastMCP's proxy, for one), built on the SDK's low-level
server so that nothing is added or taken away.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server


async def main(command: str, args: list[str]) -> None:
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with Client(stdio_client(params)) as upstream:

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return await upstream.session.list_tools()

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            # The upstream's MCPError (a JSON-RPC error) propagates as it is: the same code and message.
            return await upstream.session.call_tool(params.name, params.arguments)

        server = Server("forwarding-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write), server.lifespan(server) as state:
            options = server.create_initialization_options()
            await serve_loop(server, read, write, lifespan_state=state, init_options=options)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])

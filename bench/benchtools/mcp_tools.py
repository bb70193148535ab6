"""Three tools for ``bench/mcp_bench.py``: a success, a tool error and a missing-argument question.

``bench/bare_server.py`` declares the same three on a bare SDK ``MCPServer``: same names, same input schemas,
both sync (so both run in a worker thread).
"""

from __future__ import annotations

from errcatalog.errors import ApiServerError
from mcpserver.registry import tool

TOOLSET = "bench"


@tool(
    description="Return the text.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    toolset=TOOLSET,
)
def echo(text: str) -> str:
    return text


@tool(
    description="Fail as if the upstream service answered 502.",
    input_schema={"type": "object", "properties": {}},
    toolset=TOOLSET,
)
def fail_upstream() -> str:
    raise ApiServerError(502, "upstream answered 502")  # -> SERVER_ERROR


@tool(
    description="Return the query; called without it, the caller gets the catalog's question.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    toolset=TOOLSET,
)
def needs_input(query: str) -> str:
    return query

"""A tool of an app installed by ``ERRCATALOG_EXTRA_APPS``, as the "your own tools" guide writes one."""

from __future__ import annotations

from mcpserver.registry import tool


@tool(
    toolset="extra",
    description="Say hello to someone by name. Use it when the user asks to greet a person.",
    input_schema={
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Who to greet"}},
        "required": ["name"],
    },
)
def greet(name: str) -> str:
    return f"Hello, {name}."

from __future__ import annotations

from django.apps import AppConfig


class McpserverConfig(AppConfig):
    name = "mcpserver"
    verbose_name = "MCP endpoint"

    def ready(self) -> None:
        # The metrics API, a layer below, learns our tools from here: a tool of ours never called is still a tool.
        from errcatalog.web.api.metrics_filters import own_tools_from
        from mcpserver.registry import served_tool_names

        own_tools_from(served_tool_names)

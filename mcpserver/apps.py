from __future__ import annotations

from django.apps import AppConfig


class McpserverConfig(AppConfig):
    name = "mcpserver"
    verbose_name = "MCP endpoint"

    def ready(self) -> None:
        # The layers below learn the live side's answers from here. The metrics API: our tools (a tool of ours never
        # called is still a tool). The gateway's admin: our tools (what a named server may be composed of) and how to
        # connect to an upstream once (its "test connection").
        from errcatalog.gateway import live
        from errcatalog.web.api import metrics_filters
        from mcpserver.gateway.probe import probe
        from mcpserver.registry import served_tool_names

        metrics_filters.own_tools_from(served_tool_names)
        live.own_tools_from(served_tool_names)
        live.upstreams_probed_by(probe)

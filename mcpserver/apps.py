from __future__ import annotations

from django.apps import AppConfig


class McpserverConfig(AppConfig):
    name = "mcpserver"
    verbose_name = "MCP endpoint"

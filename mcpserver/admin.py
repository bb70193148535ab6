"""The MCP server's admin pages (Django looks here): the gateway's upstreams."""

import mcpserver.gateway.admin  # noqa: F401  (registers UpstreamAdmin)

"""The MCP server's admin pages (Django looks here): the gateway's upstreams and its inbox of unclassified failures."""

import mcpserver.gateway.admin
import mcpserver.gateway.inbox_admin  # noqa: F401  (each registers its models with the admin site)

"""The official MCP conformance suite's fixtures, outside the production apps.

Installed only where the "conformance" toolset is on (``./dev conformance`` sets ``ERRCATALOG_MCP_TOOLSETS`` to
include it): ``mcp_tools`` registers the suite's tools, ``mcp_extensions`` adds the resources, prompts, completion,
log level and resumable streams the suite checks, through ``mcpserver.extensions``. Nothing in ``errcatalog`` or
``mcpserver`` imports it.
"""

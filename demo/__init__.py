"""The demo app: the seed documents' scenarios as MCP tools, for the embedded setup and the tests.

Installed only where the "demo" toolset is on (``ERRCATALOG_MCP_TOOLSETS``; on by default with ``ERRCATALOG_DEBUG``),
it registers its tools through ``mcp_tools`` like any host project's app. Owns the ``Document`` model and its
services. May import ``mcpserver``'s extension API (``registry``, ``agent_tools``) and ``errcatalog``; nothing in
``errcatalog`` or ``mcpserver`` imports it.
"""

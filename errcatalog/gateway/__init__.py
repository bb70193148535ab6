"""The gateway's records: the upstream MCP servers whose tools ``/mcp`` serves behind the catalog.

Owns the ``Upstream`` model (one upstream server: its transport, where it runs, its limits and which of its tools
are exposed), the one write path for it (``services``, used by admin and ``catalog_import``), its secrets (header
and environment values read from our environment or kept encrypted, never in the clear: ``secrets``), the
``mcpServers`` block MCP clients use (``client_config``) and the plain configuration each serving process runs
(``selectors.upstream_configs``); and the named servers staff compose of our tools and upstreams (``NamedServer``,
served at ``/mcp/<name>``; their one write path, ``named_servers``; ``selectors.named_server_configs``); and the admin
pages of these records (``admin``: upstreams and their tools' review; ``named_server_admin``).
Connecting, listing and forwarding are the MCP server's (``mcpserver.gateway``): this package imports no SDK and no
``mcpserver``. What its admin needs of the MCP server (a connection test, the names of our own tools) is handed over
when the app starts (``live``). May import the kernel and what every domain's admin shares
(``errcatalog.versioned_admin``); no other domain.
"""

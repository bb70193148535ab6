"""The MCP endpoint at /mcp: the official SDK's Streamable HTTP server over the catalog.

Owns the SDK wiring (``server``), the HTTP guard and token check (``auth``), sessions, the JSON-RPC error screen,
the call pipeline (``pipeline``: one function from request to outcome), argument validation, elicitation, the tool
registry and the product's own tools. May import every ``errcatalog`` domain; nothing in ``errcatalog`` imports it,
and it imports no demo or conformance code.
"""

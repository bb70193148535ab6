"""The catalog: error codes, their template variants, parameter hints and classification rules.

Owns the catalog models, the write path every writer calls (``services``), reads for listing (``selectors``),
the catalog document (YAML/JSON import and export, ``document``), the database-backed snapshot every process
renders from (``snapshot``), previews of every rendered face, and the admin pages. May import rendering
(``errcatalog.render``), the outcome metrics it shows beside each variant (``errcatalog.outcomes``) and the
kernel; never the web layer or the MCP server.
"""

"""The catalog: error codes, their template variants, parameter hints and classification rules.

Owns the catalog models with the catalog's rules (``models``: constraints, and the row rules every writer's
check runs), the one write path the admin, the REST API and import call (``services``), reads for listing
(``selectors``), the catalog document (parsing, validating and serialising YAML/JSON, ``document``), the export
of the catalog in the database as one document (``export``), the shipped default catalog (``defaults``), the
catalog revision that triggers raise with every change (``revision``), the snapshot every process renders from
and rebuilds when the revision moves (``snapshot``), previews of every rendered face, and the admin pages. May
import rendering (``errcatalog.render``), the outcome metrics it shows beside each variant
(``errcatalog.outcomes``) and the kernel; never the web layer or the MCP server.
"""

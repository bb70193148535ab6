"""OAuth scopes: what a token may do, in the words of the rights client tokens have always had.

A scope grants a right only as far as the grant (``ClientToken``) and its user allow: an OAuth token's rights are
its scopes, narrowed by its grant's flags (which its user may untick in admin), and metrics stay staff-only.
The consent page shows each scope's sentence from ``settings.OAUTH2_PROVIDER["SCOPES"]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

TOOLS = "tools"
CATALOG_READ = "catalog:read"
CATALOG_WRITE = "catalog:write"
METRICS_READ = "metrics:read"
ALL = (TOOLS, CATALOG_READ, CATALOG_WRITE, METRICS_READ)
# What an MCP client needs, and so what /mcp's 401 challenge and resource metadata ask for.
MCP = (TOOLS, CATALOG_READ)
# The REST API's: its reads are the catalog's, its writes need catalog:write, its metrics metrics:read.
API = (CATALOG_READ, CATALOG_WRITE, METRICS_READ)


@dataclass(frozen=True, slots=True)
class Rights:
    call_tools: bool = False
    read_catalog: bool = False
    write_catalog: bool = False
    read_metrics: bool = False


def rights_of(scopes: Iterable[str]) -> Rights:
    held = frozenset(scopes)
    return Rights(
        call_tools=TOOLS in held,
        read_catalog=CATALOG_READ in held,
        write_catalog=CATALOG_WRITE in held,
        read_metrics=METRICS_READ in held,
    )


def scope_string(scopes: Iterable[str]) -> str:
    """The scopes in their canonical order, space-separated (the form of a ``scope`` parameter)."""
    held = set(scopes)
    return " ".join(scope for scope in ALL if scope in held)

"""The gateway's live side: upstream MCP servers connected, their tools served through the one call pipeline.

``errcatalog.gateway`` holds the records (which upstreams, how to reach them, their secrets); this package
connects to them with the SDK's client (``connection``: one session per upstream per process, its supervisor,
limits, and each call forwarded), follows the records as they change and turns upstream tools into tools of our
registry's kind (``pool``), and names every way an upstream can fail (``failures``). Each of the connection's other
jobs is a module of its own: the circuit breaker (``breaker``), the SDK client's transports (``transport``), a stdio
child's stderr (``stderr``), an upstream's requests for input relayed to our client (``elicitation``), what a
result says (``results``) and a one-off check (``probe``); a relay of another feature gets one too.
``served_tools`` is what the pipeline and ``tools/list`` read: our enabled tools and the upstreams', one mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from mcpserver.gateway.pool import gateway
from mcpserver.registry import ToolSpec

__all__ = ["gateway", "served_tools"]

_served: tuple[Mapping[str, ToolSpec], Mapping[str, ToolSpec], Mapping[str, ToolSpec]] | None = None


def served_tools(own: Mapping[str, ToolSpec]) -> Mapping[str, ToolSpec]:
    """``own`` (the registry's enabled tools) and every upstream tool, by name; an own tool wins a name clash.

    Read on every call: the merged mapping is rebuilt only when either side is a new mapping.
    """
    global _served
    upstream = gateway.tools()
    if not upstream:
        return own
    served = _served
    if served is None or served[0] is not own or served[1] is not upstream:
        merged = MappingProxyType({**upstream, **own})
        served = _served = (own, upstream, merged)
    return served[2]

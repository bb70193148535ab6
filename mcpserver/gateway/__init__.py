"""The gateway's live side: upstream MCP servers connected, their tools served through the one call pipeline.

``errcatalog.gateway`` holds the records (which upstreams, how to reach them, their secrets); this package
connects to them with the SDK's client (``connection``: one session per upstream per process, its supervisor,
limits, and each call forwarded), follows the records as they change and turns upstream tools into tools of our
registry's kind (``pool``), and names every way an upstream can fail (``failures``). Each of the connection's other
jobs is a module of its own: the circuit breaker (``breaker``), the SDK client's transports (``transport``), a stdio
child's stderr (``stderr``), an upstream's requests for input relayed to our client, form and URL mode
(``elicitation``), and the completion of a URL one relayed to the session it went to (``elicitation_complete``), its
sampling and roots requests (``sampling``, ``roots``), any of them answered by a 2026-07-28 client in a round trip of
ours (``round_trip``; a 2025-11-25 upstream's call parked meanwhile, ``parking``), what a result says (``results``)
and a one-off check (``probe``); a relay of another feature gets one too.
``served_tools`` is what the pipeline and ``tools/list`` read at ``/mcp``: our enabled tools and the upstreams', one
mapping; ``server_tools`` what they read at a server's path (``/mcp/<upstream>``: that upstream's tools alone, under
their own names; a named server's ``/mcp/<name>``: the tools staff composed it of, under ``/mcp``'s names).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from errcatalog.gateway.selectors import NamedServerConfig
from errcatalog.vocabulary import ROOT_SERVER
from mcpserver.gateway.pool import gateway
from mcpserver.registry import ToolSpec

__all__ = ["gateway", "served_tools", "server_tools", "upstream_alone"]

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


# Each server's tools, with the served mapping and the named server they were taken from. Only served upstreams' and
# named servers' names get past the guard; the bound only guards memory.
_views: dict[str, tuple[Mapping[str, ToolSpec], object, Mapping[str, ToolSpec]]] = {}
_MAX_VIEWS = 256


def server_tools(own: Mapping[str, ToolSpec], server: str) -> Mapping[str, ToolSpec]:
    """The tools the server ``server`` serves, by the name it serves each under.

    ``ROOT_SERVER`` (``/mcp``) serves ``served_tools(own)``. An upstream's server (``/mcp/<upstream>``) serves exactly
    the tools of that upstream ``/mcp`` serves (its approved metadata; an own tool that takes its served name hides
    it there too), each under its own name at the upstream. A named server serves the tools of ``/mcp`` it is
    composed of, under the same names as ``/mcp``: its own tools, and its upstreams' (all, or the ones it names),
    prefixed, since two upstreams may each have a tool of the same name. The values are the same ``ToolSpec``s,
    whose ``name`` is the served name at ``/mcp``: the name a token's tool scope, classification rules and outcomes
    know the tool by. Read on every call: rebuilt only when the served mapping or the named server is a new one.
    """
    served = served_tools(own)
    if server == ROOT_SERVER:
        return served
    named = gateway.named_servers.get(server)
    kept = _views.get(server)
    if kept is not None and kept[0] is served and kept[1] is named:
        return kept[2]
    if named is not None:
        view = MappingProxyType({name: spec for name, spec in served.items() if _composes(named, name, spec)})
    else:
        view = MappingProxyType({spec.upstream_tool: spec for spec in served.values() if spec.upstream == server})
    if len(_views) >= _MAX_VIEWS:
        _views.clear()
    _views[server] = (served, named, view)
    return view


def _composes(named: NamedServerConfig, name: str, spec: ToolSpec) -> bool:
    """Whether the named server serves the tool ``/mcp`` serves as ``name``."""
    if not spec.upstream:
        return name in named.tools
    if spec.upstream not in named.upstreams:
        return False
    chosen = named.upstreams[spec.upstream]
    return chosen is None or spec.upstream_tool in chosen


def upstream_alone(server: str) -> bool:
    """Whether ``server`` is an upstream served alone at its own path: neither ``/mcp`` nor a named server (whose
    resources, prompts and completions are ``/mcp``'s, for the upstreams it is composed of)."""
    return server != ROOT_SERVER and server not in gateway.named_servers

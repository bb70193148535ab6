"""Virtual servers: each upstream served alone at ``/mcp/<name>``, and each named server staff composed of our tools
and upstreams at ``/mcp/<name>``, beside ``/mcp`` itself, which serves everything.

A request's path names its server (``server_of_path``): ``ROOT_SERVER`` for ``/mcp``, an upstream's or a named
server's name for ``/mcp/<name>`` (exactly one segment in the vocabulary's server-name rule; anything else names no
server; no upstream and named server share a name).
``mcpserver.server.McpApp`` puts the name in the request's ASGI scope (``mcpserver.auth.SERVER_SCOPE_KEY``), where

- the guard (``mcpserver.auth.McpHttpGuard``) answers one fixed 404 for a path that names no server, an upstream or
  named server that is not served (unknown or disabled) and a server the token may not use (``ClientToken.servers``),
  after the token;
- ``mcpserver.sessions`` keeps each 2025-11-25 session on the path it was opened at (another path: 404);
- the handlers read it (``mcpserver.auth.request_server``): ``tools/list`` and ``tools/call`` serve the server's tools
  (``mcpserver.gateway.server_tools``: an upstream's tools under their own names, a named server's under ``/mcp``'s;
  the pipeline unchanged); ``view_handlers`` below answers resources, prompts and completion.

At an upstream's path, resources, prompts and completion are the upstream's own, relayed (``mcpserver.offerings``,
whose handlers ``view_handlers`` puts in place of ``/mcp``'s there). A named server answers them as ``/mcp`` does
(the catalog's, then its upstreams' namespaced as at ``/mcp``, then an extension's): ``mcpserver.offerings`` offers
only the upstreams it is composed of there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from errcatalog.vocabulary import ROOT_SERVER, is_server_name
from mcpserver.auth import request_server
from mcpserver.gateway import upstream_alone

MCP_PATH = "/mcp"
SERVER_PATH_PREFIX = MCP_PATH + "/"

Handler = Callable[..., Awaitable[Any]]


def server_of_path(path: str) -> str | None:
    """The server ``path`` names: ``ROOT_SERVER`` for ``/mcp``, the name for ``/mcp/<name>``, else None.

    ``path`` is the ASGI scope's, percent-decoded already: an encoded slash has become a second segment, and a
    name with any character outside the rule (upper case, dots, a trailing slash) names nothing.
    """
    if path == MCP_PATH:
        return ROOT_SERVER
    if not path.startswith(SERVER_PATH_PREFIX):
        return None
    name = path[len(SERVER_PATH_PREFIX) :]
    return name if name and is_server_name(name) else None


def view_handlers(handlers: Mapping[str, Handler], at_upstream: Mapping[str, Handler]) -> dict[str, Handler]:
    """``handlers`` (the SDK ``Server`` keywords of ``/mcp``, which named servers answer too), each one ``at_upstream``
    also names answered at an upstream's path by that handler instead (``mcpserver.offerings``: the upstream's own
    resources, prompts and completions); the others unchanged. A keyword only ``at_upstream`` names is served at
    upstreams' paths alone."""
    names = handlers.keys() | at_upstream.keys()
    return {
        name: _at_root_only(handlers.get(name), at_upstream[name]) if name in at_upstream else handlers[name]
        for name in names
    }


def _at_root_only(handler: Handler | None, at_upstream: Handler) -> Handler:
    async def handle(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        if upstream_alone(request_server(ctx.request)):
            return await at_upstream(ctx, params)
        if handler is None:
            raise MCPError(METHOD_NOT_FOUND, "Method not found")
        return await handler(ctx, params)

    return handle

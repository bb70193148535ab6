"""Virtual servers: each upstream served alone at ``/mcp/<name>``, beside ``/mcp`` itself, which serves everything.

A request's path names its server (``server_of_path``): ``ROOT_SERVER`` for ``/mcp``, an upstream's name for
``/mcp/<name>`` (exactly one segment in the vocabulary's server-name rule; anything else names no server).
``mcpserver.server.McpApp`` puts the name in the request's ASGI scope (``mcpserver.auth.SERVER_SCOPE_KEY``), where

- the guard (``mcpserver.auth.McpHttpGuard``) answers one fixed 404 for a path that names no server, an upstream that
  is not served (unknown or disabled) and a server the token may not use (``ClientToken.servers``), after the token;
- ``mcpserver.sessions`` keeps each 2025-11-25 session on the path it was opened at (another path: 404);
- the handlers read it (``mcpserver.auth.request_server``): ``tools/list`` and ``tools/call`` serve the server's tools
  (``mcpserver.gateway.server_tools``: an upstream's tools under their own names, the pipeline unchanged);
  ``view_handlers`` below answers resources, prompts and completion.

Resources, prompts and completions of an upstream are not relayed yet: at an upstream's path lists are empty and a
read, subscription or prompt is answered as an unknown one is at ``/mcp``. Relaying the upstream's own takes the
place of ``_AT_AN_UPSTREAM``'s answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from errcatalog.vocabulary import ROOT_SERVER, is_server_name
from mcpserver.auth import request_server
from mcpserver.reference import unknown_error

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


async def _no_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


async def _no_templates(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


async def _no_prompts(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[])


async def _unknown_resource(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ReadResourceResult:
    raise await unknown_error(ctx)


async def _unsubscribed(ctx: ServerRequestContext[Any, Any], params: Any) -> types.EmptyResult:
    return types.EmptyResult()


async def _unknown_prompt(ctx: ServerRequestContext[Any, Any], params: Any) -> types.GetPromptResult:
    raise await unknown_error(ctx, prompt=True)


async def _no_completion(ctx: ServerRequestContext[Any, Any], params: Any) -> types.CompleteResult:
    return types.CompleteResult(completion=types.Completion(values=[]))


# What an upstream's server answers instead of ``/mcp``'s handler of the same SDK keyword.
_AT_AN_UPSTREAM: Mapping[str, Handler] = {
    "on_list_resources": _no_resources,
    "on_list_resource_templates": _no_templates,
    "on_read_resource": _unknown_resource,
    "on_subscribe_resource": _unknown_resource,
    "on_unsubscribe_resource": _unsubscribed,
    "on_list_prompts": _no_prompts,
    "on_get_prompt": _unknown_prompt,
    "on_completion": _no_completion,
}


def view_handlers(handlers: Mapping[str, Handler]) -> dict[str, Handler]:
    """``handlers`` (the SDK ``Server`` keywords of ``/mcp``), each of resources, prompts and completion answered at an
    upstream's path as that server answers it (see the module docstring); the others unchanged."""
    return {
        name: _at_root_only(handler, _AT_AN_UPSTREAM[name]) if name in _AT_AN_UPSTREAM else handler
        for name, handler in handlers.items()
    }


def _at_root_only(handler: Handler, at_upstream: Handler) -> Handler:
    async def handle(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        if request_server(ctx.request) == ROOT_SERVER:
            return await handler(ctx, params)
        return await at_upstream(ctx, params)

    return handle

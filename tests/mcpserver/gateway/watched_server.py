"""An SDK low-level server whose resource subscriptions can be watched from outside: ``watched_server.py MODE
[PORT]``.

``MODE`` is ``stdio``, ``http`` (2025-11-25 only: it refuses ``server/discover``, so clients fall back to the
handshake, and it keeps ``resources/subscribe`` per session, letting a session's go when the session is deleted, as a
careful server does) or ``http-modern`` (2026-07-28: changes are told on ``subscriptions/listen`` streams).

Tools: ``held`` answers which URIs are held by how many sessions (JSON); ``touch`` sends
``notifications/resources/updated`` for a URI to every session that holds it (and to listen streams); ``relist``
tells every session it knows, and every listen stream, that its resources and prompts changed; ``relist_mine`` tells
the calling session alone (its own lists changed, as a server with lists per session says it; in ``http-modern``,
which has no sessions, it is ``relist``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp.shared.exceptions import MCPError

MODE = sys.argv[1] if len(sys.argv) > 1 else "stdio"
MODERN = MODE == "http-modern"
RESOURCES = ("watch://one", "watch://two")

# Session key -> the URIs it holds; session key -> the session, to tell it.
held: dict[str, set[str]] = {}
sessions: dict[str, Any] = {}
bus = InMemorySubscriptionBus()


def _key(ctx: Any) -> str:
    request = ctx.request
    session_id = request.headers.get("mcp-session-id") if request is not None else None
    return session_id or "stdio"


def _known(ctx: Any) -> str:
    key = _key(ctx)
    sessions[key] = ctx.session
    return key


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    _known(ctx)
    return types.ListResourcesResult(resources=[types.Resource(name=uri, uri=uri) for uri in RESOURCES])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    if params.uri not in RESOURCES:
        raise MCPError(-32002, "Resource not found")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=f"{params.uri} reads")])


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    held.setdefault(_known(ctx), set()).add(params.uri)
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    held.get(_key(ctx), set()).discard(params.uri)
    return types.EmptyResult()


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(name="watched")])


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    _known(ctx)  # a client that connects lists the tools first: from then on it is told when the lists change
    schema = {"type": "object", "properties": {}}
    uri = {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}
    return types.ListToolsResult(
        tools=[
            types.Tool(name="held", description="Which resources are held.", input_schema=schema),
            types.Tool(name="touch", description="Change a resource.", input_schema=uri),
            types.Tool(name="relist", description="Change the lists.", input_schema=schema),
            types.Tool(name="relist_mine", description="Change the calling session's lists.", input_schema=schema),
        ]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    _known(ctx)
    if params.name == "held":
        counts: dict[str, int] = {}
        for uris in held.values():
            for uri in uris:
                counts[uri] = counts.get(uri, 0) + 1
        text = json.dumps(counts, sort_keys=True)
    elif params.name == "touch":
        uri = str((params.arguments or {})["uri"])
        await bus.publish(ResourceUpdated(uri=uri))
        for key, uris in list(held.items()):
            if uri in uris and key in sessions:
                await sessions[key].send_resource_updated(uri)
        text = "touched"
    elif params.name == "relist_mine" and not MODERN:
        await ctx.session.send_resource_list_changed()
        await ctx.session.send_prompt_list_changed()
        text = "relisted"
    else:
        await bus.publish(ResourcesListChanged())
        await bus.publish(PromptsListChanged())
        for session in list(sessions.values()):
            if not MODERN:
                await session.send_resource_list_changed()
                await session.send_prompt_list_changed()
        text = "relisted"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def no_discovery(ctx: Any, params: Any) -> Any:
    raise MCPError(types.METHOD_NOT_FOUND, "Method not found")


server = Server(
    "watched",
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_subscribe_resource=subscribe,
    on_unsubscribe_resource=unsubscribe,
    on_list_prompts=list_prompts,
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(bus) if MODERN else None,
)
if not MODERN:
    server.add_request_handler("server/discover", types.RequestParams, no_discovery)


def _forgetting_deleted(app: Any) -> Any:
    """``app``, letting a session's subscriptions go when the session is deleted."""

    async def asgi(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "DELETE":
            headers = dict(scope["headers"])
            key = headers.get(b"mcp-session-id", b"").decode()
            held.pop(key, None)
            sessions.pop(key, None)
        await app(scope, receive, send)

    return asgi


if __name__ == "__main__":
    if MODE == "stdio":
        from mcp.server.runner import serve_loop
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            # The handshake-only loop: a 2025-11-25 server, as the HTTP one is.
            async with stdio_server() as (read, write), server.lifespan(server) as state:
                options = server.create_initialization_options()
                await serve_loop(server, read, write, lifespan_state=state, init_options=options)

        anyio.run(main)
    else:
        import uvicorn

        uvicorn.run(_forgetting_deleted(server.streamable_http_app()), host="127.0.0.1", port=int(sys.argv[2]),
                    log_level="critical")  # fmt: skip

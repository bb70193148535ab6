"""The protocol beyond tools that the official conformance suite checks: resources, prompts, completion, the log
level, and resumable SSE streams. Contributed to ``mcpserver.server`` through its extension point, only where the
conformance app is installed (``./dev conformance``). errcatalog's own resources and prompts (``mcpserver.reference``)
are served beside these; completion, the log level and resumption are the fixtures' alone.
"""

from __future__ import annotations

import secrets
from collections import deque
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import INVALID_PARAMS

from conformance import mcp_tools as conformance
from mcpserver.extensions import ServerExtension, extend_server
from mcpserver.jsonrpc_errors import sanctioned_error

# The SSE events kept for resumption, and the reconnection delay suggested to clients, shorter than
# test_reconnection's wait so the client is back before its result.
REPLAY_BUFFER_EVENTS = 1000
RETRY_MS = 100


async def list_resources(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult.model_validate({"resources": list(conformance.RESOURCES)}, by_name=False)


async def list_resource_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    templates = list(conformance.RESOURCE_TEMPLATES)
    return types.ListResourceTemplatesResult.model_validate({"resourceTemplates": templates}, by_name=False)


async def read_resource(
    ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    contents = conformance.resource_contents(str(params.uri))
    if contents is None:
        raise sanctioned_error(INVALID_PARAMS, "Unknown resource")
    return types.ReadResourceResult.model_validate({"contents": contents}, by_name=False)


async def subscribe_resource(
    ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
) -> types.EmptyResult:
    uri = str(params.uri)
    if not conformance.is_resource(uri):
        raise sanctioned_error(INVALID_PARAMS, "Unknown resource")
    conformance.subscriptions.add(uri)
    return types.EmptyResult()


async def unsubscribe_resource(
    ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
) -> types.EmptyResult:
    conformance.subscriptions.discard(str(params.uri))
    return types.EmptyResult()


async def list_prompts(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult.model_validate({"prompts": list(conformance.PROMPTS)}, by_name=False)


async def get_prompt(
    ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
) -> types.GetPromptResult:
    try:
        messages = conformance.prompt_messages(params.name, params.arguments or {})
    except conformance.MissingPromptArgument as exc:
        # The argument name is the fixture's own, never the caller's text.
        raise sanctioned_error(INVALID_PARAMS, f"Missing required argument: {exc.name}") from None
    if messages is None:
        raise sanctioned_error(INVALID_PARAMS, "Unknown prompt")
    return types.GetPromptResult.model_validate({"messages": messages}, by_name=False)


async def complete(ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams) -> types.CompleteResult:
    values: list[str] = []
    if isinstance(params.ref, types.PromptReference):
        values = conformance.complete_prompt_argument(params.ref.name, params.argument.name, params.argument.value)
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))


async def set_logging_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    # Acknowledged, as the suite requires, but not applied: only the fixtures log, always at info.
    return types.EmptyResult()


HANDLERS: dict[str, Any] = {
    "on_list_resources": list_resources,
    "on_list_resource_templates": list_resource_templates,
    "on_read_resource": read_resource,
    "on_subscribe_resource": subscribe_resource,
    "on_unsubscribe_resource": unsubscribe_resource,
    "on_list_prompts": list_prompts,
    "on_get_prompt": get_prompt,
    "on_completion": complete,
    "on_set_logging_level": set_logging_level,
}


class ReplayBuffer(EventStore):
    """The last SSE events of this process in memory, so a client that reconnects with Last-Event-ID resumes.

    Only with the conformance fixtures (``test_reconnection``, SEP-1699), never in production: the buffer lives
    in one process (a reconnection that lands on another worker finds nothing), and the SDK's ``EventStore``
    interface names a stream by its JSON-RPC request id only, so two sessions whose requests share an id share a
    stream here. Event ids are random, so a client can only resume from an event it was sent.
    """

    def __init__(self, size: int = REPLAY_BUFFER_EVENTS) -> None:
        self._events: deque[tuple[str, str, types.JSONRPCMessage | None]] = deque(maxlen=size)

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        event_id = secrets.token_urlsafe(12)
        self._events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        events = list(self._events)
        start = next((i for i, (_, event_id, _) in enumerate(events) if event_id == last_event_id), None)
        if start is None:
            return None
        stream = events[start][0]
        for stream_id, event_id, message in events[start + 1 :]:
            # Priming events (no message) only mark a position; they are not replayed.
            if stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


extend_server(
    ServerExtension(
        name="conformance",
        handlers=HANDLERS,
        event_store=ReplayBuffer,
        retry_interval_ms=RETRY_MS,
    )
)

"""The protocol beyond tools that the official conformance suite checks: resources, prompts, completion and the log
level. Contributed to ``mcpserver.server`` through its extension point, only where the
conformance app is installed (``./dev conformance``). errcatalog's own resources and prompts (``mcpserver.reference``)
are served beside these; completion and the log level are the fixtures' alone. Resumable SSE streams, which the suite
checks too, are the product's own (``mcpserver.streams``).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types import INVALID_PARAMS

from conformance import mcp_tools as conformance
from mcpserver.extensions import ServerExtension, extend_server
from mcpserver.jsonrpc_errors import sanctioned_error


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


extend_server(ServerExtension(name="conformance", handlers=HANDLERS))

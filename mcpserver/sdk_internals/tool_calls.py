"""A 2026-07-28 ``tools/call`` served by our innermost server middleware rather than by the SDK's runner.

The reach: ``ModernToolCalls`` takes the steps of ``ServerRunner`` for such a call (check the request against the
version's schema, parse its parameters, call the handler, then dump, validate and stamp the result: ``wire``), so
that a repeated failure's result goes out in the form made the first time, which spares about an eighth of such a
call (``bench/call_path_bench.py``). The SDK documents that a middleware which answers without ``call_next`` owns
its result; the ones outside this (the span per message, request-state sealing) still see it. Other methods and
2025-11-25 calls go on to the runner (a session's call also passes its initialize gate). Plain path: the server is
built without it (``fast_paths``), and the runner calls the ``on_call_tool`` handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types.methods import validate_client_request
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpserver.sdk_internals import wire

# What answers a call: the handler the runner would call, minus its wire form.
Answer = Callable[
    [ServerRequestContext[Any, Any], types.CallToolRequestParams],
    Awaitable[types.CallToolResult | types.InputRequiredResult],
]


class ModernToolCalls:
    """The innermost server middleware: a 2026-07-28 ``tools/call`` answered by ``answer``, sent in its wire form
    with ``server_info`` stamped as the SDK would stamp it (``Server.server_info_stamp``)."""

    def __init__(self, answer: Answer, *, server_info: Mapping[str, Any]) -> None:
        self._answer = answer
        self._server_info = server_info

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        version = ctx.protocol_version
        if ctx.method != "tools/call" or version not in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        # A malformed request raises pydantic's ValidationError, which the SDK answers as it would from the runner
        # (INVALID_PARAMS, no pydantic text on the wire).
        validate_client_request("tools/call", version, ctx.params)
        params = types.CallToolRequestParams.model_validate(ctx.params or {}, by_name=False)
        return wire.wire_result(await self._answer(ctx, params), version, server_info=self._server_info)

"""The resources a successful result links to or embeds, remembered for the call's client, so that ``/mcp`` reads
them at the upstream that answered (``offerings.remember_links``); the result itself passes untouched."""

from __future__ import annotations

from mcpserver.gateway.forwarded import CallNext, ForwardedCall, Result
from mcpserver.gateway.offerings import remember_links


async def relay(call: ForwardedCall, call_next: CallNext) -> Result:
    result = await call_next(call)
    origin = call.origin
    if origin is not None:
        remember_links(call.upstream, origin.client.key if origin.client else None, result)
    return result

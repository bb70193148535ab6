"""A relay of the tests' own, added to the gateway's chain by ``test_relay_chain``: it notes each call it passes on and
what came back, and stamps the call's text so the upstream's echo shows the call it got was the relay's."""

from __future__ import annotations

import dataclasses

from mcpserver.gateway.forwarded import CallNext, ForwardedCall, Result

seen: list[tuple[str, dict, Result]] = []


async def relay(call: ForwardedCall, call_next: CallNext) -> Result:
    arguments = {**call.arguments, "text": f"audited {call.arguments.get('text', '')}"}
    result = await call_next(dataclasses.replace(call, arguments=arguments))
    seen.append((call.tool, arguments, result))
    return result

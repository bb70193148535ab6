"""Where the upstream's log messages for the call go (``log_relay.call_logging``): to its 2025-11-25 session's
account, the call counted in flight there meanwhile, or back on its 2026-07-28 request when the request opted in;
the connection asks the upstream for them at that level and relays what it sends (``log_relay.relay_log``)."""

from __future__ import annotations

import dataclasses

from mcpserver.gateway.forwarded import CallNext, ForwardedCall, Result
from mcpserver.gateway.log_relay import call_logging


async def relay(call: ForwardedCall, call_next: CallNext) -> Result:
    origin = call.origin
    if origin is None:
        return await call_next(call)
    with call_logging(origin.session_id, origin.context, origin.log_level) as log:
        return await call_next(dataclasses.replace(call, log=log) if log is not None else call)

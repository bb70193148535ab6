"""A 2026-07-28 client's call of a 2025-11-25 upstream, which asks in mid-call, parked while the client answers in
round trips (``mcpserver.gateway.parking``): the upstream call goes on in a task of its own, with the parked call as
its client, while each of the client's requests carries an answer and takes the next question or the result. With no
room to park another call, the call goes on as without a client that can answer."""

from __future__ import annotations

import dataclasses

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpserver.gateway.forwarded import CallNext, ForwardedCall, Result
from mcpserver.gateway.parking import ParkedCall, parked_call


async def relay(call: ForwardedCall, call_next: CallNext) -> Result:
    round_trip = call.round_trip
    if round_trip is None or call.connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return await call_next(call)

    async def start(parked: ParkedCall) -> Result:
        # The parked call answers for the client; the upstream's progress and log messages go to whichever of the
        # client's requests is under way.
        return await call_next(
            dataclasses.replace(
                call,
                ask=parked.ask,
                client=parked,
                session_id=None,
                round_trip=None,
                progress=parked.relay_progress if call.progress is not None else None,
                log=parked.request_log(call.log),
            )
        )

    origin = call.origin
    result = await parked_call(
        start,
        upstream=call.upstream,
        tool=call.tool,
        client_key=origin.client.key if origin is not None and origin.client else None,
        round_trip=round_trip,
        progress=call.progress,
        log=call.log,
    )
    return result if result is not None else await call_next(call)

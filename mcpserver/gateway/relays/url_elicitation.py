"""An upstream's -32042 (URL elicitation required), passed on as the same protocol error to a 2025-11-25 client that
takes URL elicitations (the error is gone from 2026-07-28); anyone else gets the catalog's text for it, as for any
failure of the upstream's. The URLs are those ``elicitation.checked_url_elicitation`` let through, and their
completions go to the client's session (``elicitation_complete``)."""

from __future__ import annotations

from mcp_types import URL_ELICITATION_REQUIRED

from mcpserver.calls import RelayedProtocolError
from mcpserver.gateway.elicitation import UrlElicitationRequired
from mcpserver.gateway.elicitation_complete import remember
from mcpserver.gateway.forwarded import CallNext, ForwardedCall, Result
from mcpserver.jsonrpc_errors import FIXED_MESSAGES, sanctioned_error

# Our own -32042's message: fixed text (the upstream's own never reaches a client).
MESSAGE = FIXED_MESSAGES[URL_ELICITATION_REQUIRED]


async def relay(call: ForwardedCall, call_next: CallNext) -> Result:
    try:
        return await call_next(call)
    except UrlElicitationRequired as exc:
        origin = call.origin
        if origin is None or origin.modern or not exc.elicitations:
            raise
        capabilities = origin.context.capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if elicitation is None or elicitation.url is None:
            raise
        error = sanctioned_error(URL_ELICITATION_REQUIRED, MESSAGE, exc.error_data())
        for params in exc.elicitations:
            remember(call.upstream, exc.channel, params.elicitation_id, origin.context.session_stream())
        raise RelayedProtocolError(error) from None

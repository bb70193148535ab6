"""An upstream's ``roots/list``, answered with the roots of the client of the call it belongs to.

The gateway declares roots to an upstream whose ``relay_roots`` is on (the default), over an upstream session that
belongs to one client or to none (``UpstreamConnection._open``): never to a stdio child that every client shares
(``session_mode`` shared), which could keep one client's folders and answer them to another's call. A request made
during a call (found as elicitations are: ``forwarded.calling``) is relayed to that call's client when it declared
roots: in mid-call on a 2025-11-25 session (the tool context's ``list_roots``), or in a 2026-07-28 round trip
(``elicitation.relayed``). The client's roots go back unchanged, up to ``MAX_ROOTS``. A request outside any call,
or from a call whose client has none, gets the error the spec names for a client without roots (``METHOD_NOT_FOUND``):
no other client's roots, and no empty list an upstream would keep as this client's.

A client's ``notifications/roots/list_changed`` is not forwarded: an upstream asks again during the client's next
call, where each request is answered afresh, and a request outside any call has no client's roots to answer with.
``roots_changed`` is the seam for forwarding it over a client's own upstream session.
"""

from __future__ import annotations

import mcp_types as types
from mcp.client import Client

from mcpserver.gateway.elicitation import CallersClient
from mcpserver.registry import ClientCannotAnswer

# More roots than a workspace has; a client's answer is cut to these.
MAX_ROOTS = 100


async def relay_roots(client: CallersClient | None) -> types.ListRootsResult | types.ErrorData:
    """The roots of ``client``, that of the call this request belongs to (``forwarded.calling`` found it; None: no
    call it can be told to belong to), or the error a client without roots gives."""
    if client is None:
        return unsupported()
    try:
        result = await client.list_roots()
    except ClientCannotAnswer:
        return unsupported()
    return types.ListRootsResult(roots=result.roots[:MAX_ROOTS])


def unsupported() -> types.ErrorData:
    """What the upstream hears when no client that declared roots is behind its request."""
    return types.ErrorData(code=types.METHOD_NOT_FOUND, message="List roots not supported")


async def roots_changed(client: Client) -> None:
    """Tell an upstream session that belongs to one client that this client's roots changed.

    For per-client upstream sessions: a session shared by every client has nobody's roots to change."""
    await client.session.send_roots_list_changed()

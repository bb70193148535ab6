"""An upstream's ``roots/list``, answered with the roots of the client of the call it belongs to.

The gateway declares roots to an upstream whose ``relay_roots`` is on (``UpstreamConnection._open``). A request made
during a call (found as elicitations are: ``elicitation.caller``) is relayed to that call's client when it declared
roots: in mid-call on a 2025-11-25 session (the tool context's ``list_roots``), or in a 2026-07-28 round trip
(``elicitation.relayed``). The client's roots go back unchanged, up to ``MAX_ROOTS``. A request outside any call,
or from a call whose client has none, gets the error the spec names for a client without roots (``METHOD_NOT_FOUND``):
no other client's roots, and no empty list an upstream would keep as this client's.

A client's ``notifications/roots/list_changed`` is not forwarded while one upstream session serves every client of
the process: the upstream would ask again outside any call, where no client's roots belong. Each relayed request is
answered afresh instead. A per-client upstream session forwards it (``roots_changed``) and answers its requests with
that client's roots at any time.
"""

from __future__ import annotations

from collections.abc import Sequence

import mcp_types as types
from mcp.client import Client

from mcpserver.gateway.elicitation import Asker, caller
from mcpserver.registry import ClientCannotAnswer

# More roots than a workspace has; a client's answer is cut to these.
MAX_ROOTS = 100


async def relay_roots(in_flight: Sequence[Asker]) -> types.ListRootsResult | types.ErrorData:
    """The roots of the client of the call this request belongs to, or the error a client without roots gives."""
    asker = caller(in_flight)
    if asker is None or asker.client is None:
        return unsupported()
    try:
        result = await asker.client.list_roots()
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

"""An upstream's requests for input, relayed to the user of the call they belong to.

- **In mid-call** (``relay_elicitation``): a 2025-11-25 upstream's ``elicitation/create`` on its session, or a
  2026-07-28 upstream's input request that the SDK's driver hands to the elicitation callback, goes to the client of
  the call it belongs to (which the connection finds with ``forwarded.calling``) on its 2025-11-25 session
  (``ToolContext.elicit``; a URL one, ``CallersClient.elicit_url``).
- **Across calls**: a 2026-07-28 client answers in a round trip of our own (``round_trip``); a 2025-11-25 upstream's
  call waits for it, parked (``parking``: the parked call is the call's client).

Form elicitations are relayed with their messages cut and redacted; URL ones as ``checked_url_elicitation`` checks
them, and each one relayed to a 2025-11-25 session is remembered for its completion (``elicitation_complete``).
Anything else is declined, as without a client that can answer. An upstream's -32042 (URL elicitation required) is
``UrlElicitationRequired``, which the relay ``relays.url_elicitation`` passes on to a client that takes URLs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import mcp_types as types
from django.conf import settings

from errcatalog.safety import redacted_for_people
from mcpserver.gateway import notices
from mcpserver.gateway.elicitation_complete import Session, remember
from mcpserver.gateway.failures import UpstreamJsonRpcError
from mcpserver.registry import ClientCannotAnswer, UserAnswer

# An elicitation's message as our client's user sees it: the upstream's text, cut and with credentials redacted.
ELICITATION_MESSAGE_MAX_CHARS = 1000
# How many of an upstream's -32042 elicitations are relayed at most.
MAX_REQUIRED_ELICITATIONS = 4
# A URL elicitation's address: the upstream's own, which our client's user is asked to open. Longer ones are not
# relayed (2,000 characters: what browsers and proxies reliably carry), nor ids beyond the bound.
ELICITATION_URL_MAX_CHARS = 2000
ELICITATION_ID_MAX_CHARS = 200
_LOOPBACK_NAMES = frozenset({"localhost"})

# How a call asks our client's user (``ToolContext.elicit``): message and schema in, ``UserAnswer`` out; it raises
# ``ClientCannotAnswer`` when the client cannot take the request.
Ask = Callable[[str, Mapping[str, Any]], Awaitable[UserAnswer]]


class CallersClient(Protocol):
    """What a forwarded call's client may be asked besides a form (``mcpserver.server``'s tool context): each raises
    ``ClientCannotAnswer`` when the client did not declare it or cannot take a request on this call."""

    async def create_message(self, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        """``sampling/createMessage`` to the client, tied to the call (``sampling``)."""
        ...

    async def list_roots(self) -> types.ListRootsResult:
        """``roots/list`` to the client, tied to the call (``roots``)."""
        ...

    async def elicit_url(self, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        """A URL-mode ``elicitation/create`` to the client, tied to the call."""
        ...

    def session_stream(self) -> Session | None:
        """The call's 2025-11-25 session, by its id, where a relayed URL elicitation's completion goes
        (``elicitation_complete``); None on 2026-07-28, whose requests belong to no session."""
        ...


async def relay_elicitation(
    params: types.ElicitRequestParams,
    ask: Ask | None,
    client: CallersClient | None,
    secrets: Sequence[str],
    *,
    upstream: str,
    channel: str = notices.SHARED,
) -> types.ElicitResult:
    """An upstream asks for input, on ``channel`` (``notices``), during the call whose ``ask`` and ``client`` these
    are (``forwarded.calling`` found it; None: no call it can be told to belong to): relayed to that call's user when
    its client can answer, else declined."""
    if isinstance(params, types.ElicitRequestURLParams):
        return await _relay_url_elicitation(params, client, secrets, upstream, channel)
    if ask is None or not isinstance(params, types.ElicitRequestFormParams):
        return types.ElicitResult(action="decline")
    message = redacted_for_people(params.message, known=secrets, limit=ELICITATION_MESSAGE_MAX_CHARS)
    try:
        answer = await ask(message, dict(params.requested_schema))
    except ClientCannotAnswer:
        return types.ElicitResult(action="decline")
    if answer.action == "accept":
        return types.ElicitResult(action="accept", content=answer.content)
    return types.ElicitResult(action="cancel" if answer.action == "cancel" else "decline")


async def _relay_url_elicitation(
    params: types.ElicitRequestURLParams,
    client: CallersClient | None,
    secrets: Sequence[str],
    upstream: str,
    channel: str,
) -> types.ElicitResult:
    """A URL elicitation, relayed to the call's client when it declared URL mode and the URL passes the checks; one
    the client answered is remembered for its completion (``elicitation_complete``), before the upstream hears the
    answer."""
    checked = checked_url_elicitation(params, secrets)
    if client is None or checked is None:
        return types.ElicitResult(action="decline")
    try:
        answer = await client.elicit_url(checked)
    except ClientCannotAnswer:
        return types.ElicitResult(action="decline")
    remember(upstream, channel, checked.elicitation_id, client.session_stream())
    return types.ElicitResult(action=answer.action)  # URL mode carries no content


def checked_url_elicitation(
    params: types.ElicitRequestURLParams, secrets: Sequence[str]
) -> types.ElicitRequestURLParams | None:
    """An upstream's URL elicitation as our client's user gets it, or None when it is not relayed.

    The URL is the upstream's and stays unchanged (the user opens it in a browser, outside MCP): it must be https
    (http only to a loopback address in development, ``DEBUG``), name a host, carry no user name or password, fit
    ``ELICITATION_URL_MAX_CHARS`` and hold no whitespace or control characters, and none of the values the gateway
    sent the upstream. Its message is cut and redacted like a form's."""
    url = params.url
    if not url_relayable(url) or any(len(secret) >= 4 and secret in url for secret in secrets):
        return None
    elicitation_id = params.elicitation_id
    if elicitation_id is not None and (
        len(elicitation_id) > ELICITATION_ID_MAX_CHARS or not elicitation_id.isprintable()
    ):
        return None
    message = redacted_for_people(params.message, known=secrets, limit=ELICITATION_MESSAGE_MAX_CHARS)
    return types.ElicitRequestURLParams(message=message, url=url, elicitation_id=elicitation_id)


def url_relayable(url: str) -> bool:
    """Whether an upstream's URL may be put before our client's user (``checked_url_elicitation``)."""
    if len(url) > ELICITATION_URL_MAX_CHARS or not url.isprintable() or any(c.isspace() for c in url):
        return False
    scheme, separator, rest = url.partition("://")
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if not separator or not authority or "@" in authority or "\\" in rest:
        return False
    if scheme.lower() == "https":
        return True
    return scheme.lower() == "http" and settings.DEBUG and _loopback(authority)


def _loopback(authority: str) -> bool:
    host = authority[1:].split("]", 1)[0] if authority.startswith("[") else authority.rsplit(":", 1)[0]
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class UrlElicitationRequired(UpstreamJsonRpcError):
    """An upstream's -32042 (URL elicitation required): the call needs its user at the upstream's URLs first.

    Classified like any JSON-RPC error of the upstream (its code chooses the catalog's text for a client that cannot
    open them); ``elicitations`` are those that pass ``checked_url_elicitation``, for a client that can, and
    ``channel`` the one the call went over (``notices``), where their completions will come."""

    def __init__(
        self, upstream: str, data: object, message: str, *, secrets: Sequence[str], channel: str = notices.SHARED
    ):
        super().__init__(
            upstream,
            f"{types.URL_ELICITATION_REQUIRED}: {message}",
            said=message,
            secrets=secrets,
            jsonrpc_code=types.URL_ELICITATION_REQUIRED,
        )
        self.channel = channel
        self.elicitations: list[types.ElicitRequestURLParams] = []
        try:
            required = types.ElicitationRequiredErrorData.model_validate(data, by_name=False)
        except ValueError:
            return
        for params in required.elicitations[:MAX_REQUIRED_ELICITATIONS]:
            checked = checked_url_elicitation(params, secrets)
            if checked is None:  # all of them or none: the user could not finish what the upstream needs
                self.elicitations = []
                return
            self.elicitations.append(checked)

    def error_data(self) -> dict[str, Any]:
        """The data of our own -32042 to a client that takes URL elicitations."""
        data = types.ElicitationRequiredErrorData(elicitations=self.elicitations)
        return data.model_dump(by_alias=True, mode="json", exclude_none=True)

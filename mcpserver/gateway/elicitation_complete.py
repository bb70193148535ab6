"""An upstream's ``notifications/elicitation/complete``, relayed to the client session its URL elicitation went to.

A URL elicitation ends outside MCP, with the user at the upstream's page; the upstream then says so with
``notifications/elicitation/complete`` and the elicitation's id, and the client may retry the call or close what it
showed. The gateway relays an upstream's URL elicitations to our 2025-11-25 sessions in mid-call (``elicitation``) and
as the -32042 error (``pool``), and remembers each one it relayed (``remember``): the upstream, the channel it came
on (the shared session, or the client's own upstream session: ``notices``) and its id, for the session it went to.
When the upstream's notification names a remembered id on that channel (``relay_completion``), that session alone
is told, once, with that id: the notification we send carries nothing else of the upstream's. The gateway rewrites no
elicitation id, so the id is the one the client was given.

Dropped, and logged once: an id never relayed, one relayed on another channel or to another upstream, and one
relayed on a shared channel (a stdio child every client shares) to two sessions, since nothing tells which of them it
is for. Dropped too: what was relayed to a session once it ended (``forget_session``), after ``RELAYED_SECONDS``, or
the oldest when ``MAX_RELAYED`` are held; the spec has clients never wait for the notification, so one that never comes
costs a client nothing. A 2026-07-28 client is never told: the notification is gone from that revision, and its
requests belong to no session that outlives them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Protocol

import anyio

from errcatalog.caching import register_cache

logger = logging.getLogger("mcpserver.gateway")

# The URL elicitations this process remembers, at most: a thousand is far beyond the sign-ins one process relays
# within ``RELAYED_SECONDS``; beyond it, the oldest are let go.
MAX_RELAYED = 1000
# How long a relayed elicitation's completion is awaited: 15 minutes, beyond the 10 an OAuth authorization code may
# live (RFC 6749, section 4.1.2), the longest sign-in a URL elicitation commonly stands for.
RELAYED_SECONDS = 900.0
# How long telling one session may take before it is skipped (a client that stopped reading its stream), as
# ``mcpserver.changes`` gives a session.
NOTIFY_TIMEOUT_SECONDS = 5.0


class SessionStream(Protocol):
    """Our 2025-11-25 session as the SDK serves it (``ServerSession``): a notification sent outside any request goes on
    the session's own stream, which outlives the call."""

    async def send_elicit_complete(self, elicitation_id: str) -> None: ...


# Our session's id and its stream (``CallersClient.session_stream``).
Session = tuple[str, SessionStream]
# An upstream, the channel its elicitation came on (``notices``) and the elicitation's id.
_Key = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class _Relayed:
    """Where a relayed elicitation's completion goes; ``session`` None: relayed to two sessions, told to neither."""

    session: Session | None
    at: float


class RelayedElicitations:
    """The URL elicitations relayed, by upstream, channel and id: at most ``max_entries``, each for ``max_age``
    seconds, the oldest first to go. Used on the event loop only."""

    def __init__(self, *, max_entries: int, max_age: float) -> None:
        self.max_entries = max_entries
        self.max_age = max_age
        self._relayed: dict[_Key, _Relayed] = {}  # oldest first: an entry is moved to the end when set again

    def remember(self, key: _Key, session: Session) -> None:
        now = time.monotonic()
        known = self._relayed.pop(key, None)
        told: Session | None = session
        # One id on one channel, relayed to two sessions: which of them a completion is for is unknown.
        if (
            known is not None
            and now - known.at < self.max_age
            and (known.session is None or known.session[0] != session[0])
        ):
            told = None
        self._let_go(now)
        self._relayed[key] = _Relayed(told, now)

    def take(self, key: _Key) -> Session | None:
        """The session ``key`` was relayed to, forgotten as it is handed out; None when there is no one session."""
        known = self._relayed.pop(key, None)
        if known is None or time.monotonic() - known.at >= self.max_age:
            return None
        return known.session

    def forget(self, session_id: str) -> None:
        """Our session ``session_id`` ended: what was relayed to it is let go."""
        gone = [key for key, known in self._relayed.items() if known.session and known.session[0] == session_id]
        for key in gone:
            del self._relayed[key]

    def clear(self) -> None:
        self._relayed.clear()

    def __len__(self) -> int:
        return len(self._relayed)

    def _let_go(self, now: float) -> None:
        """Room for one more: the expired go (they are the oldest), then the oldest while the bound is reached."""
        relayed = self._relayed
        while relayed:
            oldest = next(iter(relayed))
            if now - relayed[oldest].at < self.max_age and len(relayed) < self.max_entries:
                return
            del relayed[oldest]


_relayed = RelayedElicitations(max_entries=MAX_RELAYED, max_age=RELAYED_SECONDS)
register_cache("mcpserver.gateway.elicitation_complete", _relayed.clear)


def remember(upstream: str, channel: str, elicitation_id: str | None, session: Session | None) -> None:
    """A URL elicitation of ``upstream`` that came on ``channel`` was relayed to ``session`` (None: a 2026-07-28
    client, which is never told); one without an id can never be completed."""
    if elicitation_id is not None and session is not None:
        _relayed.remember((upstream, channel, elicitation_id), session)


def forget_session(session_id: str) -> None:
    """Our 2025-11-25 session ended (``Gateway.client_session_ended``)."""
    _relayed.forget(session_id)


async def relay_completion(upstream: str, channel: str, elicitation_id: str) -> None:
    """``upstream`` said on ``channel`` that its elicitation ``elicitation_id`` completed: the session it was relayed
    to is told; anything else is dropped. Never raises: a session that went meanwhile costs the upstream nothing."""
    session = _relayed.take((upstream, channel, elicitation_id))
    if session is None:
        logger.debug("Upstream %s: the completion of an elicitation not relayed to one session was dropped", upstream)
        return
    with anyio.move_on_after(NOTIFY_TIMEOUT_SECONDS):
        try:
            await session[1].send_elicit_complete(elicitation_id)
        except Exception as exc:
            logger.debug("Upstream %s: an elicitation's completion was not relayed (%s)", upstream, type(exc).__name__)

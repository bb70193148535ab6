"""What an upstream tells about its resources and prompts, handed to whoever follows it in this process.

An upstream's 2025-11-25 session sends ``notifications/resources/updated`` (a resource it was asked to watch changed),
``notifications/resources/list_changed`` and ``notifications/prompts/list_changed``; a 2026-07-28 upstream sends the
same events on a ``subscriptions/listen`` stream. ``UpstreamConnection`` hands each to ``heard`` with the upstream's
name and the channel it came on: ``SHARED`` (the connection's shared session, or its listen stream) or the key of a
client's own upstream session (``client_sessions``), whose updates and list changes belong to that client alone.
When an upstream connects or goes away, ``offerings_changed`` tells the followers that its lists changed as a whole,
and when it connects, ``Connected`` says that what was held on its shared session (subscriptions) is to be held
again; the same on a client's own channel when that session is opened again after it broke.
``mcpserver.offerings`` follows them (``follow``) and tells our clients in the names they know
(``mcpserver.changes``). A notification carries no upstream text but a URI, which the follower only compares with the
URIs its clients subscribed to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import mcp_types as types

logger = logging.getLogger("mcpserver.gateway")


@dataclass(frozen=True, slots=True)
class Connected:
    """The channel's session is new (a first connection, or again after a drop)."""


Notice = (
    types.ResourceUpdatedNotification
    | types.ResourceListChangedNotification
    | types.PromptListChangedNotification
    | Connected
)
# The notifications ``heard`` takes (an ``isinstance`` check).
HEARD = (types.ResourceUpdatedNotification, types.ResourceListChangedNotification, types.PromptListChangedNotification)
# The channel of the connection's shared session (a client's own session's is its key, never empty).
SHARED = ""

Follower = Callable[[str, Notice, str], None]
_followers: list[Follower] = []


def follow(follower: Follower) -> Callable[[], None]:
    """Call ``follower(upstream, notice, channel)`` (on the event loop) for each notice of an upstream; returns the
    remover."""
    _followers.append(follower)
    return lambda: _followers.remove(follower) if follower in _followers else None


def heard(upstream: str, notice: Notice, *, channel: str = SHARED) -> None:
    """Hand ``notice`` of ``upstream`` to every follower; a follower's bug never reaches the upstream's session."""
    for follower in list(_followers):
        try:
            follower(upstream, notice, channel)
        except Exception:
            logger.exception("Following a notice of upstream %s failed", upstream)


def offerings_changed(upstream: str, kinds: Iterable[str], *, connected: bool = False) -> None:
    """``upstream`` connected (``connected``) or went away: its ``kinds`` (``resources``, ``prompts``) are to be
    listed afresh."""
    if connected:
        heard(upstream, Connected())
    if "resources" in kinds:
        heard(upstream, types.ResourceListChangedNotification())
    if "prompts" in kinds:
        heard(upstream, types.PromptListChangedNotification())

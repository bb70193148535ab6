"""What an upstream tells its session about its resources and prompts, handed to whoever follows it in this process.

An upstream's 2025-11-25 session sends ``notifications/resources/updated`` (a resource it was asked to watch changed),
``notifications/resources/list_changed`` and ``notifications/prompts/list_changed``. ``UpstreamConnection``'s message
handler hands each to ``heard`` with the upstream's name; ``mcpserver.offerings`` follows them (``follow``) and tells
our clients in the names they know (``mcpserver.changes``). A notification carries no upstream text but a URI, which
the follower only compares with the URIs its clients subscribed to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import mcp_types as types

logger = logging.getLogger("mcpserver.gateway")

Notice = types.ResourceUpdatedNotification | types.ResourceListChangedNotification | types.PromptListChangedNotification
# The notifications ``heard`` takes (an ``isinstance`` check).
HEARD = (types.ResourceUpdatedNotification, types.ResourceListChangedNotification, types.PromptListChangedNotification)

_followers: list[Callable[[str, Notice], None]] = []


def follow(follower: Callable[[str, Notice], None]) -> Callable[[], None]:
    """Call ``follower(upstream, notice)`` (on the event loop) for each notice of an upstream; returns the remover."""
    _followers.append(follower)
    return lambda: _followers.remove(follower) if follower in _followers else None


def heard(upstream: str, notice: Notice) -> None:
    """Hand ``notice`` of ``upstream`` to every follower; a follower's bug never reaches the upstream's session."""
    for follower in list(_followers):
        try:
            follower(upstream, notice)
        except Exception:
            logger.exception("Following a notice of upstream %s failed", upstream)

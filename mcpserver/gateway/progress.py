"""Progress relayed: an upstream's ``notifications/progress`` for a forwarded call, to the client that asked.

A client that sends a ``progressToken`` with its call has the gateway ask the upstream for progress on the forwarded
call (the SDK client's own token), and every notification the upstream sends for it goes on to the client's request
(``ToolContext.progress``, which answers to the client's token). The values pass as they are; the message is the
upstream's text meant for people, so it is cut and its credentials redacted, like an elicitation's message. A client
that did not ask gets nothing, and the upstream is not asked.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from errcatalog.safety import redacted_for_people

logger = logging.getLogger("mcpserver.gateway")

# A progress notification's message as our client's user sees it, at most.
PROGRESS_MESSAGE_MAX_CHARS = 500


class Progress(Protocol):
    """How a call reports progress: the SDK client's progress callback, and ``ToolContext.progress``."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


def relaying_progress(report: Progress, *, upstream: str, secrets: Sequence[str]) -> Progress:
    """The SDK client's progress callback for one forwarded call, relaying to ``report``. A client that went away
    meanwhile costs the call nothing: the call goes on, and ends as it ends."""

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        if message is not None:
            message = redacted_for_people(message, known=secrets, limit=PROGRESS_MESSAGE_MAX_CHARS)
        try:
            await report(progress, total, message)
        except Exception as exc:
            logger.debug("Upstream %s: a progress notification was not relayed (%s)", upstream, type(exc).__name__)

    return relay

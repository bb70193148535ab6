"""A 2026-07-28 upstream's changes, followed on a ``subscriptions/listen`` stream of the connection's shared session.

A 2026-07-28 server tells of changes only on a listen stream that a client keeps open, with a filter fixed for the
stream's life. ``ChangesFollowed.follow`` (run by ``UpstreamConnection`` while its session serves) keeps one open that
asks for the upstream's tool list changes (each one makes the connection list its tools again), its resource and
prompt list changes (where it offers them) and the updates of the resources our clients hold on the shared channel
(``listen_to``, from ``mcpserver.gateway.offerings.Subscriptions``); the last three are handed to ``notices`` as the
notifications a 2025-11-25 session would have sent. When those resources change, the stream is opened again with
them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    SubscriptionLost,
    ToolsListChanged,
)

from mcpserver.gateway import notices

logger = logging.getLogger("mcpserver.gateway")

# The resources one listen stream to an upstream asks about (the rest are heard of only if the upstream reports them
# anyway): a bound on what one stream's request carries.
MAX_LISTENED_URIS = 256


class ChangesFollowed:
    """One upstream's listen stream (see the module docstring); ``tools_changed`` is the connection's."""

    def __init__(self, upstream: str, settings: Mapping[str, Any], tools_changed: Callable[[], None]) -> None:
        self.upstream = upstream
        self._settings = settings
        self._tools_changed = tools_changed
        self._listened: frozenset[str] = frozenset()
        self._relisten = anyio.Event()

    def listen_to(self, uris: frozenset[str]) -> None:
        """Ask for the updates of ``uris`` from now on (the stream is opened again with them)."""
        if uris != self._listened:
            self._listened = uris
            self._relisten.set()

    async def follow(self, client: Client, offers: Collection[str]) -> None:
        """Keep the stream open on ``client`` until cancelled.

        Every time the stream is acknowledged the tools are listed again (a change between the listing and the
        stream would be missed otherwise). When it drops they are listed at once, which also finds an upstream
        that went away (the listing fails, the supervisor reconnects), and it is opened again after a growing
        pause. It is opened again at once when the resources to hear of change. An upstream that refuses the
        stream, or tool changes on it, has its tools re-read on the timer; its resources and prompts are then
        followed by no notice.
        """
        name, pause = self.upstream, self._settings["RECONNECT_MIN_SECONDS"]
        followed = False
        while True:
            relisten = self._relisten = anyio.Event()
            uris = sorted(self._listened)[:MAX_LISTENED_URIS]
            try:
                async with client.listen(
                    tools_list_changed=True,
                    prompts_list_changed="prompts" in offers,
                    resources_list_changed="resources" in offers,
                    resource_subscriptions=uris,
                ) as subscription:
                    if not subscription.honored.tools_list_changed:
                        logger.info("Upstream %s does not report its tool changes; re-read on the timer", name)
                        return
                    followed = True
                    self._tools_changed()
                    pause = self._settings["RECONNECT_MIN_SECONDS"]
                    async with anyio.create_task_group() as watch:
                        watch.start_soon(_cancel_when, relisten, watch.cancel_scope)
                        async for event in subscription:
                            self._heard(event)
                        watch.cancel_scope.cancel()
            except (SubscriptionLost, TimeoutError, OSError, httpx2.HTTPError) as exc:
                logger.debug("Upstream %s: its stream of changes ended (%s)", name, type(exc).__name__)
            except Exception as exc:  # refused (ListenNotSupportedError, MCPError), or an answer the SDK rejects
                # Never the session's end: whatever an upstream sends here, the timer still re-reads its tools. The
                # class only: the upstream's own words are logged redacted, where its failures are.
                if not followed:
                    logger.info(
                        "Upstream %s: no stream of tool changes (%s); re-read on the timer", name, type(exc).__name__
                    )
                    return
                logger.debug("Upstream %s: its stream of changes failed (%s)", name, type(exc).__name__)
            if relisten.is_set():
                continue
            self._tools_changed()
            await anyio.sleep(pause)
            pause = min(pause * 2, self._settings["RECONNECT_MAX_SECONDS"])

    def _heard(self, event: object) -> None:
        """One event of the stream, as the notification a 2025-11-25 session would have sent."""
        if isinstance(event, ToolsListChanged):
            self._tools_changed()
        elif isinstance(event, ResourceUpdated):
            params = types.ResourceUpdatedNotificationParams(uri=event.uri)
            notices.heard(self.upstream, types.ResourceUpdatedNotification(params=params))
        elif isinstance(event, ResourcesListChanged):
            notices.heard(self.upstream, types.ResourceListChangedNotification())
        elif isinstance(event, PromptsListChanged):
            notices.heard(self.upstream, types.PromptListChangedNotification())


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()

"""Per-client rate limit for tool calls: a fixed one-minute window, shared through Redis by every process.

``rate_limit_retry_after(client_key, per_minute=...)`` counts one call and answers None, or the seconds left in
the window when the call is over the limit. It never waits for Redis:

- Each process counts its calls on the event loop and sends what it counted to Redis in the background, at most
  ``SYNC_SECONDS`` later, every client's increments in one script call (INCRBY, and EXPIRE when the window's key
  is new). Redis answers with the totals of every process, which the next calls here add their own to. So the
  limit holds across processes, give or take the calls other processes answered in the last ``SYNC_SECONDS``:
  a client over its limit is refused at most that much later than an exact count would. (An exact count costs a
  round trip per call; through Django's cache it cost three, in a worker thread, on a new connection each time,
  since Django's cache handler is local to each request's context: a large share of the endpoint's throughput.)
- Without Redis (the default cache is not Redis: ``settings.CACHES``) the count is this process's own.
- While Redis is unreachable the process goes on with what it knew plus its own calls (logged once per outage):
  the limit then holds per process rather than across them, which is looser by the number of processes but
  never stops the endpoint. What it counted meanwhile reaches Redis when Redis answers again.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

import redis.asyncio

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.catalog.snapshot import acatalog_snapshot
from errcatalog.dependencies import REDIS, REDIS_ERRORS
from errcatalog.render import Failure, RenderedError, render
from mcpserver.call_settings import call_settings

WINDOW_SECONDS = 60
# How long a call's count may wait in this process before it reaches Redis (and other processes' counts reach
# this one).
SYNC_SECONDS = 0.05
LOCAL_FALLBACK = "the MCP rate limit counts calls in each process until Redis is back"
_REDIS_BACKEND = "django.core.cache.backends.redis.RedisCache"
# Redis answers a local round trip in well under a millisecond: a second means it is gone (the cache's OPTIONS
# may say otherwise).
_TIMEOUT_SECONDS = 1.0
# One entry per client key, [window, count], replaced each window, so it stays as small as the number of tokens; the
# bound only guards memory (starting over empty forgets at most one window's counts).
_local_windows: BoundedCache[str, list[int]] = process_cache(
    "mcpserver.ratelimit.local_windows", scope="process", max_entries=10_000
)
# KEYS: the windows' keys; ARGV: the expiry, then each key's increment. Returns each key's total.
_ADD = """
local totals = {}
for i, key in ipairs(KEYS) do
  local step = tonumber(ARGV[i + 1])
  local total = redis.call('INCRBY', key, step)
  if total == step then redis.call('EXPIRE', key, ARGV[1]) end
  totals[i] = total
end
return totals
"""


def _count_locally(client_key: str, window: int) -> int:
    counted = _local_windows.get(client_key)
    if counted is None or counted[0] != window:
        counted = [window, 0]
        _local_windows.set(client_key, counted)
    counted[1] += 1  # in place: calls are counted on the event loop, one at a time
    return counted[1]


class _SharedWindows:
    """This process's view of one Redis's windows, on one event loop (an asyncio client belongs to its loop).

    ``shared``: each key's total as Redis last reported it; ``sending``: increments on their way there;
    ``pending``: increments counted since. A call's count is the sum of the three. Only the current window's keys
    are kept: a new window starts every dict over.
    """

    def __init__(self, location: str, options: dict[str, Any]) -> None:
        client = redis.asyncio.Redis.from_url(
            location,
            socket_timeout=options.get("socket_timeout", _TIMEOUT_SECONDS),
            socket_connect_timeout=options.get("socket_connect_timeout", _TIMEOUT_SECONDS),
        )
        self._add = client.register_script(_ADD)
        self.window = -1
        self.shared: dict[str, int] = {}
        self.sending: dict[str, int] = {}
        self.pending: dict[str, int] = {}
        self._sync: asyncio.Task[None] | None = None

    def count(self, client_key: str, window: int) -> int:
        if window != self.window:
            self.window, self.shared, self.sending, self.pending = window, {}, {}, {}
        key = f"errcatalog:mcp-rate:{client_key}:{window}"
        pending = self.pending[key] = self.pending.get(key, 0) + 1
        if self._sync is None:
            self._sync = asyncio.get_running_loop().create_task(self._send_soon())
        return self.shared.get(key, 0) + self.sending.get(key, 0) + pending

    async def _send_soon(self) -> None:
        try:
            await asyncio.sleep(SYNC_SECONDS)
            if REDIS.available():
                await self._send()
            else:
                REDIS.degraded(LOCAL_FALLBACK)
        finally:
            self._sync = None
        if self.pending and not REDIS.down:  # counted while sending: they go next (after a failure, a call asks)
            self._sync = asyncio.get_running_loop().create_task(self._send_soon())

    async def _send(self) -> None:
        window, sending = self.window, self.pending
        if not sending:  # a new window started since this send was planned
            return
        self.sending, self.pending = sending, {}
        keys = list(sending)
        try:
            totals = await self._add(keys=keys, args=[WINDOW_SECONDS + 1, *(sending[key] for key in keys)])
        except REDIS_ERRORS as exc:
            REDIS.failed(exc)
            REDIS.degraded(LOCAL_FALLBACK)
            if window == self.window:  # counted here all the same, and sent again when Redis answers
                for key, step in sending.items():
                    self.pending[key] = self.pending.get(key, 0) + step
                self.sending = {}
            return
        REDIS.succeeded()
        if window == self.window:
            self.shared.update(zip(keys, (int(total) for total in totals), strict=True))
            self.sending = {}


# One per event loop (a server has one; tests run many) and Redis location; forgotten with their loop.
_windows: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _SharedWindows]] = weakref.WeakKeyDictionary()


def _shared_windows(cache: dict[str, Any]) -> _SharedWindows:
    per_loop = _windows.setdefault(asyncio.get_running_loop(), {})
    location = cache["LOCATION"]
    windows = per_loop.get(location)
    if windows is None:
        windows = per_loop[location] = _SharedWindows(location, cache.get("OPTIONS") or {})
    return windows


async def rate_limit_retry_after(client_key: str, *, per_minute: int) -> int | None:
    """Count one call for ``client_key``; return the seconds until its window ends when it is over the limit.

    ``per_minute`` of 0 turns the limit off. Never waits for I/O (see the module docstring).
    """
    if per_minute <= 0:
        return None
    now = int(time.time())
    window = now // WINDOW_SECONDS
    cache = call_settings.CACHES["default"]
    if cache["BACKEND"] == _REDIS_BACKEND:
        count = _shared_windows(cache).count(client_key, window)
    else:
        count = _count_locally(client_key, window)
    if count <= per_minute:
        return None
    return max(1, (window + 1) * WINDOW_SECONDS - now)


async def rate_limit_answer(retry_after: int) -> RenderedError:
    """The catalog's ``RATE_LIMIT`` for a caller over its limit outside a tool call (a session opening, a listen
    stream, a read), rendered from the snapshot this process serves; each surface puts it in its own envelope."""
    return render(
        await acatalog_snapshot(),
        Failure("RATE_LIMIT", retry_after=retry_after),
        max_chars=call_settings.ERRCATALOG["MAX_MESSAGE_CHARS"],
    )


async def rate_limit_synced() -> None:
    """Wait until what this loop counted so far has reached Redis, or failed to (tests)."""
    for windows in list(_windows.get(asyncio.get_running_loop(), {}).values()):
        while (task := windows._sync) is not None:
            await asyncio.shield(task)

"""Per-client rate limit for tool calls: a fixed one-minute window counted in the shared Django cache."""

from __future__ import annotations

import time

from asgiref.sync import sync_to_async
from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache

WINDOW_SECONDS = 60


def _count_call(key: str) -> int:
    # add() is a no-op when the key exists, so concurrent first calls of a window both land on incr().
    cache.add(key, 0, timeout=WINDOW_SECONDS + 1)
    try:
        return cache.incr(key)
    except ValueError:  # the key expired between add() and incr(): this call opens a new window
        cache.set(key, 1, timeout=WINDOW_SECONDS + 1)
        return 1


_count_call_in_thread = sync_to_async(_count_call, thread_sensitive=False)


async def rate_limit_retry_after(client_key: str, *, per_minute: int) -> int | None:
    """Count one call for ``client_key``; return the seconds until its window ends when it is over the limit.

    The window lives in the Django cache, so with Redis the limit holds across processes. ``per_minute`` of 0
    turns the limit off.
    """
    if per_minute <= 0:
        return None
    now = int(time.time())
    window = now // WINDOW_SECONDS
    key = f"errcatalog:mcp-rate:{client_key}:{window}"
    # The in-process memory cache does no I/O, so it is counted on the event loop; any other backend gets one
    # worker-thread hop for both cache operations (a hop per operation cost ~40% of a simple call's throughput).
    if isinstance(caches["default"], LocMemCache):
        count = _count_call(key)
    else:
        count = await _count_call_in_thread(key)
    if count <= per_minute:
        return None
    return max(1, (window + 1) * WINDOW_SECONDS - now)

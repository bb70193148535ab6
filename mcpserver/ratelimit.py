"""Per-client rate limit for tool calls: a fixed one-minute window counted in the shared Django cache.

While Redis is unreachable the window is counted in this process instead (logged once per outage): the limit
then holds per process rather than across them, which is looser by the number of processes but never stops
the endpoint. Counting goes back to Redis when it answers again (its window may have restarted empty).
"""

from __future__ import annotations

import time

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import cache

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.dependencies import REDIS, REDIS_ERRORS

WINDOW_SECONDS = 60
LOCAL_FALLBACK = "the MCP rate limit counts calls in each process until Redis is back"
_LOCAL_BACKEND = "django.core.cache.backends.locmem.LocMemCache"
# With the in-process cache the limit is per process anyway; counting in a dict on the event loop gives the
# same result without building a cache backend for each request's context (~8 µs) and its locking.
# One entry per client key, overwritten each window, so it stays as small as the number of tokens; the bound
# only guards memory (starting over empty forgets at most one window's counts).
_local_windows: BoundedCache[str, tuple[int, int]] = process_cache(
    "mcpserver.ratelimit.local_windows", scope="process", max_entries=10_000
)


def _count_locally(client_key: str, window: int) -> int:
    seen_window, count = _local_windows.get(client_key) or (window, 0)
    count = count + 1 if seen_window == window else 1
    _local_windows.set(client_key, (window, count))
    return count


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
    if settings.CACHES["default"]["BACKEND"] == _LOCAL_BACKEND:
        count = _count_locally(client_key, window)
    elif not REDIS.available():
        REDIS.degraded(LOCAL_FALLBACK)
        count = _count_locally(client_key, window)
    else:
        # A shared cache (Redis) gets one worker-thread hop for both operations (a hop per operation cost ~40%
        # of a simple call's throughput).
        try:
            count = await _count_call_in_thread(f"errcatalog:mcp-rate:{client_key}:{window}")
        except REDIS_ERRORS as exc:
            REDIS.failed(exc)
            REDIS.degraded(LOCAL_FALLBACK)
            count = _count_locally(client_key, window)
        else:
            REDIS.succeeded()
    if count <= per_minute:
        return None
    return max(1, (window + 1) * WINDOW_SECONDS - now)

"""The per-client window, in the process and through Redis (shared by every web process)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

import pytest
import redis

from mcpserver.ratelimit import LOCAL_FALLBACK, WINDOW_SECONDS, rate_limit_retry_after, rate_limit_synced


def redis_cache(url: str, **options: float) -> dict:
    """The cache on the tests' own Redis database (tests/conftest.py ``redis_url``)."""
    return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url, "OPTIONS": options}


def within_one_window(seconds: float = 15.0) -> None:
    """Wait, if need be, until the current rate-limit window has ``seconds`` left: counts a process holds for Redis
    belong to their window and are dropped when it ends, so a test that counts across an outage must not straddle
    two windows."""
    left = WINDOW_SECONDS - time.time() % WINDOW_SECONDS
    if left < seconds:
        time.sleep(left + 0.05)


def shared_count(url: str, client: str) -> int:
    """The client's count in Redis, over all windows (a test runs within one or two)."""
    connection = redis.Redis.from_url(url)
    try:
        return sum(int(connection.get(key)) for key in connection.scan_iter(f"errcatalog:mcp-rate:{client}:*"))
    finally:
        connection.close()


async def calls(client: str, count: int, *, per_minute: int = 3, synced: bool = True) -> list[int | None]:
    answers = [await rate_limit_retry_after(client, per_minute=per_minute) for _ in range(count)]
    if synced:
        await rate_limit_synced()
    return answers


@pytest.mark.parametrize("backend", ["locmem", "redis"])
def test_the_call_over_the_limit_gets_the_rest_of_the_window(settings, backend, request):
    if backend == "redis":
        settings.CACHES = {"default": redis_cache(request.getfixturevalue("redis_url"))}
    client = f"token:{uuid.uuid4().hex}"

    *allowed, refused = asyncio.run(calls(client, 4))

    assert allowed == [None, None, None]
    assert 1 <= refused <= 60
    if backend == "redis":  # every call reached the tests' Redis database
        assert shared_count(request.getfixturevalue("redis_url"), client) == 4


def test_zero_turns_the_limit_off():
    assert asyncio.run(rate_limit_retry_after("token:x", per_minute=0)) is None


@pytest.mark.parametrize("backend", ["locmem", "redis"])
def test_a_new_window_starts_a_new_count(settings, monkeypatch, backend, request):
    if backend == "redis":
        settings.CACHES = {"default": redis_cache(request.getfixturevalue("redis_url"))}
    client = f"token:{uuid.uuid4().hex}"
    now = [1_000_000_040.0]  # windows start at multiples of 60 s: this is 20 s into one
    monkeypatch.setattr("mcpserver.ratelimit.time.time", lambda: now[0])

    async def three_calls() -> list[int | None]:
        answers = [await rate_limit_retry_after(client, per_minute=1) for _ in range(2)]
        now[0] += 60
        return [*answers, await rate_limit_retry_after(client, per_minute=1)]

    assert asyncio.run(three_calls()) == [None, 40, None]  # 20 s into the window: 40 s left; then a new one


def test_processes_share_the_count_through_redis_within_one_sync(settings, redis_url):
    # Each asyncio.run is a new event loop with counts of its own: a process of its own, as far as counting goes.
    settings.CACHES = {"default": redis_cache(redis_url)}
    client = f"token:{uuid.uuid4().hex}"
    assert asyncio.run(calls(client, 3)) == [None, None, None]  # the first process uses up the limit

    async def second_process() -> list[int | None]:
        first = await rate_limit_retry_after(client, per_minute=3)  # before this process heard from Redis
        await rate_limit_synced()
        return [first, await rate_limit_retry_after(client, per_minute=3)]

    first, after_sync = asyncio.run(second_process())
    assert first is None  # the lag the limit allows: at most one sync period of another process's calls
    assert after_sync is not None and 1 <= after_sync <= 60
    assert shared_count(redis_url, client) == 4  # the refused call is not sent yet (no sync since)


def test_without_redis_the_limit_is_counted_in_the_process_logged_once_and_sent_when_it_returns(
    settings, tmp_path, caplog
):
    from errcatalog.dependencies import REDIS as redis_state
    from errcatalog.dependencies import RETRY_SECONDS
    from tests.support.recorder import throwaway_redis

    caplog.set_level(logging.WARNING, logger="errcatalog.dependencies")
    client = f"token:{uuid.uuid4().hex}"

    with throwaway_redis(tmp_path) as server:
        settings.CACHES = {"default": redis_cache(server.url, socket_connect_timeout=0.5, socket_timeout=0.5)}
        within_one_window()
        try:

            async def outage() -> tuple[list[int | None], list[int | None]]:
                before = await calls(client, 1)  # counted in Redis
                server.kill()
                during = await calls(client, 3)  # Redis is gone: what was known plus this process's own calls
                server.start()  # empty: the count before the outage is gone with it
                await asyncio.sleep(RETRY_SECONDS + 0.2)
                await calls(client, 1, per_minute=100)  # the next call after a second probes Redis again
                return before, during

            before, (*allowed, refused) = asyncio.run(outage())
            assert before == [None]
            assert allowed == [None, None]
            assert 1 <= refused <= 60
            logged = [r.getMessage() for r in caplog.records]
            assert logged.count("Redis is unavailable: " + LOCAL_FALLBACK) == 1
            assert sum("Redis is unreachable" in line for line in logged) == 1
            assert sum("Redis is reachable again" in line for line in logged) == 1
            assert shared_count(server.url, client) == 4  # the three counted during the outage, and the last
        finally:
            redis_state.reset()

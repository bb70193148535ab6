"""The per-client window, on the in-process cache and on Redis (shared by every web process)."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest
import redis

from mcpserver.ratelimit import LOCAL_FALLBACK, rate_limit_retry_after


def redis_cache(url: str) -> dict:
    """The cache on the tests' own Redis database (tests/conftest.py ``redis_url``)."""
    return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}


@pytest.mark.parametrize("backend", ["locmem", "redis"])
def test_the_call_over_the_limit_gets_the_rest_of_the_window(settings, backend, request):
    if backend == "redis":
        settings.CACHES = {"default": redis_cache(request.getfixturevalue("redis_url"))}
    client = f"token:{uuid.uuid4().hex}"

    async def calls():
        return [await rate_limit_retry_after(client, per_minute=3) for _ in range(4)]

    *allowed, refused = asyncio.run(calls())
    assert allowed == [None, None, None]
    assert 1 <= refused <= 60
    if backend == "redis":  # the count lives in the tests' Redis database, nowhere else
        assert redis.Redis.from_url(request.getfixturevalue("redis_url")).dbsize() > 0


def test_zero_turns_the_limit_off():
    assert asyncio.run(rate_limit_retry_after("token:x", per_minute=0)) is None


@pytest.mark.parametrize("backend", ["locmem", "redis"])
def test_a_new_window_starts_a_new_count(settings, monkeypatch, backend, request):
    if backend == "redis":
        settings.CACHES = {"default": redis_cache(request.getfixturevalue("redis_url"))}
    client = f"token:{uuid.uuid4().hex}"
    now = [1_000_000_040.0]  # windows start at multiples of 60 s: this is 20 s into one
    monkeypatch.setattr("mcpserver.ratelimit.time.time", lambda: now[0])

    async def call():
        return await rate_limit_retry_after(client, per_minute=1)

    assert asyncio.run(call()) is None
    assert asyncio.run(call()) == 40  # 20 s into the window: 40 s left
    now[0] += 60
    assert asyncio.run(call()) is None


def test_without_redis_the_limit_is_counted_in_the_process_and_logged_once(settings, tmp_path, caplog):
    from errcatalog.dependencies import REDIS as redis_state
    from tests.errcatalog.outcomes.recorder_support import throwaway_redis

    caplog.set_level(logging.WARNING, logger="errcatalog.dependencies")
    client = f"token:{uuid.uuid4().hex}"

    async def calls(count: int):
        return [await rate_limit_retry_after(client, per_minute=3) for _ in range(count)]

    with throwaway_redis(tmp_path) as server:
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": server.url,
                "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
            }
        }
        try:
            assert asyncio.run(calls(1)) == [None]  # counted in Redis
            server.kill()
            *allowed, refused = asyncio.run(calls(4))  # Redis is gone: counted here, never raising
            assert allowed == [None, None, None]
            assert 1 <= refused <= 60
            logged = [r.getMessage() for r in caplog.records]
            assert logged.count("Redis is unavailable: " + LOCAL_FALLBACK) == 1
            assert sum("Redis is unreachable" in line for line in logged) == 1
        finally:
            redis_state.reset()

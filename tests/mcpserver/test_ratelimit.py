"""The per-client window, on the in-process cache and on Redis (shared by every web process)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from mcpserver.ratelimit import rate_limit_retry_after

REDIS = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": "redis://127.0.0.1:6379/0",
    "KEY_PREFIX": "errcatalog-tests",
}


@pytest.mark.parametrize("backend", ["locmem", "redis"])
def test_the_call_over_the_limit_gets_the_rest_of_the_window(settings, backend):
    if backend == "redis":
        settings.CACHES = {"default": REDIS}
    client = f"token:{uuid.uuid4().hex}"

    async def calls():
        return [await rate_limit_retry_after(client, per_minute=3) for _ in range(4)]

    *allowed, refused = asyncio.run(calls())
    assert allowed == [None, None, None]
    assert 1 <= refused <= 60


def test_zero_turns_the_limit_off():
    assert asyncio.run(rate_limit_retry_after("token:x", per_minute=0)) is None


@pytest.mark.parametrize("backend", ["locmem", "redis"])
def test_a_new_window_starts_a_new_count(settings, monkeypatch, backend):
    if backend == "redis":
        settings.CACHES = {"default": REDIS}
    client = f"token:{uuid.uuid4().hex}"
    now = [1_000_000_040.0]  # windows start at multiples of 60 s: this is 20 s into one
    monkeypatch.setattr("mcpserver.ratelimit.time.time", lambda: now[0])

    async def call():
        return await rate_limit_retry_after(client, per_minute=1)

    assert asyncio.run(call()) is None
    assert asyncio.run(call()) == 40  # 20 s into the window: 40 s left
    now[0] += 60
    assert asyncio.run(call()) is None

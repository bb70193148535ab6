"""``/health/`` (and ``/healthz``) answers for the database and Redis, for load balancers and docker-compose."""

from __future__ import annotations

import socket

import pytest


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.django_db
def test_healthy_with_the_database(client, settings):
    settings.REDIS_URL = ""
    for path in ("/health/", "/healthz"):
        response = client.get(path)
        assert response.status_code == 200
        assert response.json() == {
            "status": "ok",
            "checks": {"database": "ok"},
            "outcomes": {"held": 0, "dropped": 0},
            # No MCP call has been served by this process yet (a served app loads the catalog at start).
            "catalog": {"revision": None, "age_seconds": None, "builds": 0},
        }
        assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_checks_redis_when_it_is_configured(client, settings, redis_url):
    # Overriding CACHES makes Django's test signals rebuild the cache handler.
    settings.REDIS_URL = redis_url
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    response = client.get("/health/")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "redis": "ok"}


@pytest.mark.django_db
def test_unreachable_redis_is_degraded_without_details(client, settings):
    # The process still serves without Redis: 200, so a load balancer keeps it (see config/health.py).
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    settings.REDIS_URL = url
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}
    response = client.get("/health/")
    assert response.status_code == 200
    assert response.json()["status"] == "degraded"
    assert response.json()["checks"] == {"database": "ok", "redis": "unavailable"}


@pytest.mark.django_db
def test_only_reads_are_allowed(client):
    assert client.post("/health/").status_code == 405

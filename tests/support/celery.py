"""The project's Celery app pointed at another broker for a block, and what the outcome streams hold."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import redis


@contextlib.contextmanager
def celery_app_on(broker_url: str, transport_options: dict[str, str]) -> Iterator[object]:
    """The project's Celery app sending to another broker for the block; yields the app.

    The app caches its broker connection and producer pools; both are dropped on the way in and out (the same
    reset Celery itself does after a fork), so sends really go to this broker and later tests get their own.
    """
    from config.celery import app

    saved = {name: app.conf[name] for name in ("broker_url", "broker_transport_options")}
    app.conf.broker_url = broker_url
    app.conf.broker_transport_options = transport_options
    _drop_broker_pools(app)
    try:
        yield app
    finally:
        app.conf.update(saved)
        _drop_broker_pools(app)


def _drop_broker_pools(app) -> None:
    app._pool = None
    with contextlib.suppress(KeyError):
        app.__dict__["amqp"]._producer_pool = None


def partition_streams() -> list[str]:
    """Every partition's stream key (``partitions.SLOTS`` of them: drainers empty the ones beyond the count too)."""
    from django.conf import settings

    from errcatalog.outcomes import partitions

    return partitions.stream_keys(settings.OUTCOMES["STREAM_KEY"])


def buffered(client: redis.Redis) -> int:
    """Entries in all partitions' streams (read and unacknowledged ones included)."""
    with client.pipeline(transaction=False) as pipe:
        for key in partition_streams():
            pipe.xlen(key)
        return sum(pipe.execute())


def unacknowledged(client: redis.Redis) -> int:
    """Entries a drainer read and did not acknowledge yet, in all partitions."""
    from django.conf import settings

    pending = 0
    for key in partition_streams():
        with contextlib.suppress(redis.ResponseError):  # no stream or no group there yet
            pending += client.xpending(key, settings.OUTCOMES["STREAM_GROUP"])["pending"]
    return pending


def stream_drained(redis_url: str) -> Callable[[], bool]:
    """True once the outcome streams hold nothing: every entry was stored and acknowledged (then deleted)."""
    client = redis.Redis.from_url(redis_url)
    return lambda: buffered(client) == 0

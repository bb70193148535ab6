"""What this process knows about the shared services it depends on: Redis and the database.

Each ``Dependency`` remembers an outage once somebody saw it fail, so that:

- callers skip the service for ``RETRY_SECONDS`` after a failure instead of each paying a connect timeout
  (``available()`` is the cheap check: one clock read and a comparison), then one call probes it again;
- every degradation is logged once per outage (``degraded(...)``), with one line when the outage begins and
  one when it ends, never a line per call.

Who reports: the rate limiter (Redis, through the Django cache), the catalog snapshot's watcher and builds, the
MCP token check and the REST API's error handler (the database), and ``/health/``, which probes both.
A dependency is back when any of them succeeds against it (``succeeded()``).

This module imports nothing of ours: every domain may use it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TypedDict

import redis
from django.db import InterfaceError, OperationalError

logger = logging.getLogger("errcatalog.dependencies")

# After a failure the service is skipped this long before one call tries it again: a returning service is noticed
# within a second, and a dead one costs a connect timeout once a second rather than on every call.
RETRY_SECONDS = 1.0

# What Django's Redis cache raises when Redis is unreachable or too slow (redis-py's errors; a socket error
# can surface unwrapped while connecting).
REDIS_ERRORS: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
# What Django raises when the database cannot be reached or the connection broke (not integrity errors: those
# are the request's own problem).
DATABASE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)
# Errors a Celery task retries, since they pass by themselves. Django wraps the driver's connection errors in these
# two; redis-py raises its own ConnectionError and TimeoutError (its TimeoutError is not the builtin one).
TRANSIENT_ERRORS = (OperationalError, InterfaceError, redis.ConnectionError, redis.TimeoutError)


class Delivery(TypedDict):
    acks_late: bool
    reject_on_worker_lost: bool
    autoretry_for: tuple[type[BaseException], ...]
    retry_jitter: bool


# What every Celery task of errcatalog shares (the policy is told in errcatalog.outcomes.tasks); each task adds its
# own backoff and retry count.
DELIVERY: Delivery = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_jitter": True,
}


class Dependency:
    """One shared service's state in this process: up, or down since a failure (and probed again every second).

    Thread-safe: reports come from the event loop and from worker threads. The hot path (``available`` while
    up) takes no lock; transitions, which happen twice per outage, take one.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._retry_at = 0.0  # monotonic time before which callers skip the service; 0 while it is up
        self._down_since: float | None = None  # wall-clock time of the outage's first failure
        self._noted: set[str] = set()  # degradations already logged during this outage

    @property
    def down(self) -> bool:
        """The last report about the service was a failure."""
        return self._down_since is not None

    def available(self) -> bool:
        """Whether to use the service now: True while it is up, and for one probe per ``RETRY_SECONDS`` while down.

        A caller that gets True during an outage must report what happened (``failed`` or ``succeeded``).
        """
        retry_at = self._retry_at
        if not retry_at:
            return True
        now = time.monotonic()
        if now < retry_at:
            return False
        # This caller probes; the others keep skipping until it reports (or for another period if it never does).
        self._retry_at = now + RETRY_SECONDS
        return True

    def failed(self, exc: BaseException) -> None:
        """Report a failure; the first one of an outage is logged (the exception's class only: its text may carry
        a host name, a password of a URL or a query)."""
        self._retry_at = time.monotonic() + RETRY_SECONDS
        if self._down_since is not None:
            return
        with self._lock:
            if self._down_since is not None:
                return
            self._down_since = time.time()
            self._noted = set()
        logger.warning("%s is unreachable (%s); trying again every %g s", self.name, type(exc).__name__, RETRY_SECONDS)

    def succeeded(self) -> None:
        """Report a success; ends an outage (logged once, with its length)."""
        if self._down_since is None:
            return
        with self._lock:
            since = self._down_since
            if since is None:
                return
            self._down_since = None
            self._retry_at = 0.0
        logger.warning("%s is reachable again after %.1f s", self.name, time.time() - since)

    def degraded(self, consequence: str) -> None:
        """Log ``consequence`` (a fixed sentence: what this process does instead) once per outage."""
        if consequence in self._noted:
            return
        with self._lock:
            if consequence in self._noted:
                return
            self._noted.add(consequence)
        logger.warning("%s is unavailable: %s", self.name, consequence)

    def reset(self) -> None:
        """Forget any outage (tests)."""
        with self._lock:
            self._retry_at = 0.0
            self._down_since = None
            self._noted = set()


REDIS = Dependency("Redis")
DATABASE = Dependency("The database")

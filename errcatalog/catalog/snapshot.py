"""The catalog's current snapshot, loaded from the database and cached per process.

Loading is cached per process and invalidated through a version in the shared cache (Redis) that every catalog
write bumps. A process keeps serving the snapshot it holds while Redis or the database is unreachable. The
snapshot itself is plain data (``errcatalog.render.entries``).
"""

from __future__ import annotations

import threading
import time

from errcatalog.caching import BoundedCache, caches_invalidate, process_cache
from errcatalog.catalog.document import catalog_document_from_db
from errcatalog.dependencies import DATABASE, DATABASE_ERRORS, REDIS, REDIS_ERRORS
from errcatalog.render.entries import CatalogSnapshot

VERSION_CACHE_KEY = "errcatalog:catalog-version"
# How long a process trusts its snapshot before asking the shared cache whether the catalog changed: an edit
# in admin reaches every web process within this many seconds, at one cache read per second per process.
RECHECK_SECONDS = 1.0
# The version a snapshot carries when it was kept (or loaded) while Redis was unreachable. The shared version is
# never empty, so the first check after Redis returns differs from it: the process reloads, and bumps the shared
# version so that processes which did not notice the outage reload too (an edit may have been made meanwhile).
_UNCHECKED = ""

_lock = threading.Lock()
# The one snapshot this process holds, as (version it was checked against, when checked, snapshot); cleared with
# the other catalog caches when this process learns of an edit.
_HELD = "current"
_held: BoundedCache[str, tuple[str, float, CatalogSnapshot]] = process_cache(
    "errcatalog.catalog.snapshot.held", scope="catalog", max_entries=1
)


def catalog_snapshot() -> CatalogSnapshot:
    """The current catalog from the database, rebuilt only when an edit has bumped the shared version.

    Neither Redis nor the database is needed once a snapshot is loaded: while Redis is unreachable the process
    serves the snapshot it holds (reloading when Redis is back), and while the database is, the last one built.
    """
    now = time.monotonic()
    cached = _held.get(_HELD)
    if cached is not None and now - cached[1] < RECHECK_SECONDS:
        return cached[2]
    version = _shared_version(recovering=cached is not None and cached[0] == _UNCHECKED)
    if version is None:
        REDIS.degraded("the catalog is served from the snapshot this process holds until Redis is back")
        if cached is not None:
            _held.set(_HELD, (_UNCHECKED, now, cached[2]))
            return cached[2]
    version = version or _UNCHECKED
    if cached is not None and cached[0] == version:
        _held.set(_HELD, (version, now, cached[2]))
        return cached[2]
    with _lock:
        try:
            snapshot = CatalogSnapshot.from_document(catalog_document_from_db())
        except DATABASE_ERRORS as exc:
            if cached is None:
                raise
            DATABASE.failed(exc)
            DATABASE.degraded("the catalog is served from the snapshot this process holds")
            # The old version stays, so the next check (in a second) tries to rebuild again.
            _held.set(_HELD, (cached[0], now, cached[2]))
            return cached[2]
        if cached is not None:
            # An edit made elsewhere reached this process: everything derived from the old catalog goes with it.
            caches_invalidate(scope="catalog")
        _held.set(_HELD, (version, now, snapshot))
    return snapshot


def _shared_version(*, recovering: bool) -> str | None:
    """The catalog version in the shared cache (created when missing), or None while Redis is unreachable."""
    from django.core.cache import cache

    if not REDIS.available():
        return None
    try:
        if recovering:
            version = str(time.time_ns())
            cache.set(VERSION_CACHE_KEY, version, timeout=None)
        else:
            version = cache.get(VERSION_CACHE_KEY)
            if version is None:
                version = str(time.time_ns())
                cache.add(VERSION_CACHE_KEY, version, timeout=None)
                version = cache.get(VERSION_CACHE_KEY, version)
    except REDIS_ERRORS as exc:
        REDIS.failed(exc)
        return None
    REDIS.succeeded()
    return version


def catalog_changed() -> None:
    """Mark the catalog as edited so every process rebuilds its snapshot (and this one its catalog caches)."""
    from django.core.cache import cache

    caches_invalidate(scope="catalog")
    try:
        cache.set(VERSION_CACHE_KEY, str(time.time_ns()), timeout=None)
    except REDIS_ERRORS as exc:
        # This process rebuilds now; it bumps the shared version when it sees Redis again (``_UNCHECKED``).
        REDIS.failed(exc)
        REDIS.degraded("catalog edits reach the other processes when Redis is back")


def catalog_snapshot_held() -> bool:
    """Whether this process holds a catalog snapshot (it can answer MCP calls without the database)."""
    return _held.get(_HELD) is not None


async def acatalog_snapshot() -> CatalogSnapshot:
    """``catalog_snapshot`` for async code: no thread hop while this process's snapshot is fresh."""
    cached = _held.get(_HELD)
    if cached is not None and time.monotonic() - cached[1] < RECHECK_SECONDS:
        return cached[2]
    from asgiref.sync import sync_to_async

    return await sync_to_async(_catalog_snapshot_in_thread, thread_sensitive=False)()


def _catalog_snapshot_in_thread() -> CatalogSnapshot:
    # Outside Django's request cycle nobody else tidies this worker thread's connection.
    from django.db import close_old_connections

    close_old_connections()
    try:
        return catalog_snapshot()
    finally:
        close_old_connections()

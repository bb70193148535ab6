"""The catalog snapshot this process serves: built from the database off the request path, swapped in whole.

Calls never wait for a build. ``catalog_snapshot()`` returns the snapshot this process holds, a read of one
variable; only the very first call of a process, which has nothing to serve yet, builds one itself. After that
a new snapshot is built beside the old one and replaces it in a single assignment, so a call in flight keeps the
snapshot it started with and the next call gets the new one.

A build is started by:

- the catalog revision moving (``errcatalog.catalog.revision``: triggers raise it with every committed change,
  whoever made it). A watcher thread per process reads it every ``CATALOG_POLL_SECONDS`` (one single-row read)
  and rebuilds when it moved, so a change made in another process, a management command or ``psql`` is served
  within about that long, with or without Redis;
- ``catalog_changed()``, which the catalog's writers call after their transaction commits: the writing process
  rebuilds at once, in the writer's thread, so that the next request sees its own edit.

Either way a change is built once per process: a build reads the revision and the catalog in one consistent
read, and a build that finds the revision it holds already does nothing. A build that fails (the database is
away) keeps the snapshot the process holds; the outage is logged once (``errcatalog.dependencies``) and the next
poll tries again. The snapshot itself is plain data (``errcatalog.render.entries``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields

from django.conf import settings
from django.db import connection, transaction

from errcatalog.background import OnDemandThread
from errcatalog.caching import caches_invalidate, register_cache
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.revision import Revision, catalog_revision
from errcatalog.dependencies import DATABASE, DATABASE_ERRORS
from errcatalog.render.entries import CatalogSnapshot, CodeEntry, HintEntry, RuleEntry, VariantEntry

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HeldSnapshot:
    """A snapshot with the catalog revision it was built from."""

    snapshot: CatalogSnapshot
    revision: Revision
    built_at: float  # time.time()
    build_seconds: float


# The snapshot this process serves. Replaced whole by ``_rebuild`` (one assignment: readers take no lock).
_held: HeldSnapshot | None = None
# Builds take turns, so that a change is built once; calls never take this lock once a snapshot is held.
_build_lock = threading.Lock()
# Snapshots built by this process since it started (or since the tests' ``caches_reset``); /health/ shows it.
_builds = 0


def catalog_snapshot() -> CatalogSnapshot:
    """The catalog this process serves. Never waits for a build, except the first call of the process."""
    held = _held
    if held is None:
        held = _first_build()
    if not _watcher.running:
        _watch()
    return held.snapshot


async def acatalog_snapshot() -> CatalogSnapshot:
    """``catalog_snapshot`` for async code: no thread hop once the process holds a snapshot."""
    held = _held
    if held is not None:
        if not _watcher.running:
            _watch()
        return held.snapshot
    from asgiref.sync import sync_to_async

    return await sync_to_async(_catalog_snapshot_in_thread, thread_sensitive=False)()


def catalog_changed() -> None:
    """Tell this process that the catalog changed: it rebuilds its snapshot now, in the caller's thread.

    The catalog's writers call this after their transaction commits (``errcatalog.catalog.signals``); other
    processes learn of the change from the revision. A process that holds no snapshot yet has nothing to rebuild
    (its first call builds one), only caches to clear.
    """
    if _held is None:
        caches_invalidate(scope="catalog")
        return
    # After a commit, the revision says whether the watcher has already built this change. Inside a transaction
    # (a test's, or a caller's own) the change may not be committed, so the revision cannot tell: build.
    _rebuild(unless_current=not connection.in_atomic_block)


def catalog_snapshot_held() -> bool:
    """Whether this process holds a catalog snapshot (it can answer MCP calls without the database)."""
    return _held is not None


def catalog_snapshot_status() -> dict[str, int | float | None]:
    """What this process serves: the revision's number, the snapshot's age in seconds, and builds so far."""
    held = _held
    return {
        "revision": held.revision[0] if held else None,
        "age_seconds": round(time.time() - held.built_at, 1) if held else None,
        "builds": _builds,
    }


# --- Building ---------------------------------------------------------------------------------------------


def _first_build() -> HeldSnapshot:
    with _build_lock:
        held = _held
        if held is None:
            held = _build(pace=False)  # nothing is served yet: as fast as it goes
    return held


def _rebuild(*, unless_current: bool) -> HeldSnapshot | None:
    """Build and swap in a new snapshot; None when the build failed (the held snapshot stays)."""
    with _build_lock:
        held = _held
        try:
            if unless_current and held is not None and catalog_revision() == held.revision:
                return held
            return _build(pace=True)
        except DATABASE_ERRORS as exc:
            DATABASE.failed(exc)
            DATABASE.degraded("the catalog is served from the snapshot this process holds")
            return None


def _build(*, pace: bool) -> HeldSnapshot:
    """Read the revision and the catalog in one consistent read, and make the result the held snapshot.

    Called with ``_build_lock`` held. ``pace``: the build shares the process with calls being served, and takes at
    most ``BUILD_SHARE`` of its time.
    """
    global _held, _builds
    started = time.perf_counter()
    # Inside a caller's transaction, ours is a savepoint and reads what the caller's transaction sees.
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            # One snapshot of the database for both reads, so the revision names exactly the catalog read. (SQLite's
            # read transaction is one snapshot already.)
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        revision = catalog_revision()
        snapshot = catalog_snapshot_from_db(version=f"revision {revision[0]}", pace=pace)
    replaced = _held is not None
    held = HeldSnapshot(snapshot, revision, time.time(), time.perf_counter() - started)
    _held = held
    _builds += 1
    DATABASE.succeeded()
    if replaced:
        # Everything this process derived from the old catalog goes with it.
        caches_invalidate(scope="catalog")
    logger.info(
        "Catalog revision %d loaded: %d codes, %d variants in %.0f ms",
        revision[0],
        len(snapshot.codes),
        sum(len(entry.variants) for entry in snapshot.codes.values()),
        held.build_seconds * 1000,
    )
    return held


# The entries' fields are the catalog models' fields of the same names (``locales`` is derived, ``_by_weight``
# a cache).
_CODE_FIELDS = tuple(f.name for f in fields(CodeEntry) if f.init and f.name not in ("variants", "locales"))
_VARIANT_FIELDS = tuple(f.name for f in fields(VariantEntry))
_HINT_FIELDS = tuple(f.name for f in fields(HintEntry))
_RULE_FIELDS = tuple(f.name for f in fields(RuleEntry))


def catalog_snapshot_from_db(*, version: str, pace: bool = False) -> CatalogSnapshot:
    """The catalog's rows as a new snapshot: four queries of plain tuples, each made into its entry directly.

    The same snapshot as ``CatalogSnapshot.from_document(catalog_document_from_db())`` (a test compares them), without
    the document's dictionaries in between: this build runs in every process after every change, so it reads the rows
    once and builds the entries directly (``bench/catalog_scale_bench.py`` measures it). With ``pace`` it sleeps between
    chunks of rows so that it takes at most ``BUILD_SHARE`` of the process's time, the rest staying with the calls
    served beside it.
    """
    pacer = _Pacer(BUILD_SHARE if pace else 1.0)
    variants_of: dict[int, list[VariantEntry]] = {}
    variant_rows = TemplateVariant.objects.order_by().values_list("error_code_id", *_VARIANT_FIELDS)
    for code_id, *values in pacer.paced(variant_rows.iterator(chunk_size=_PACE_ROWS)):
        variants_of.setdefault(code_id, []).append(VariantEntry(*values))
    codes = []
    code_rows = ErrorCode.objects.order_by().values_list("id", *_CODE_FIELDS)
    for code_id, *values in pacer.paced(code_rows.iterator(chunk_size=_PACE_ROWS)):
        entry = dict(zip(_CODE_FIELDS, values, strict=True))
        # A code's variants in the document's order (locale, then name), which weighted picks walk.
        variants = tuple(sorted(variants_of.get(code_id, ()), key=lambda v: (v.locale, v.name)))
        entry.update(
            http_statuses=tuple(entry["http_statuses"]),
            optional_parameters=tuple(entry["optional_parameters"]),
            variants=variants,
            locales=frozenset(v.locale for v in variants if v.locale and v.active),
        )
        codes.append(CodeEntry(**entry))
    hints = [HintEntry(*values) for values in ParameterHint.objects.order_by().values_list(*_HINT_FIELDS)]
    rule_columns = ["error_code__code" if name == "code" else name for name in _RULE_FIELDS]
    rules = [RuleEntry(*values) for values in ClassificationRule.objects.order_by().values_list(*rule_columns)]
    return CatalogSnapshot.from_entries(codes, hints, rules, version=version)


# The share of a serving process's time a rebuild may take: a change is served a little later (a 10,000-variant
# catalog builds in about 0.2 s of work, so in under a second), and calls served meanwhile barely slow down.
BUILD_SHARE = 0.25
# Rows between two pauses of a paced build.
_PACE_ROWS = 500


class _Pacer:
    """Sleeps between chunks of work so that the work takes at most ``share`` of the time (1: never sleeps).

    Work is measured in wall time, so a build waiting for the interpreter while calls run counts that wait as
    work: the busier the process, the slower the build goes.
    """

    def __init__(self, share: float) -> None:
        self.share = share
        self.since = time.perf_counter()

    def paced[T](self, rows: Iterable[T]) -> Iterator[T]:
        for i, row in enumerate(rows, 1):
            yield row
            if self.share < 1 and i % _PACE_ROWS == 0:
                worked = time.perf_counter() - self.since
                time.sleep(worked * (1 - self.share) / self.share)
                self.since = time.perf_counter()


def _catalog_snapshot_in_thread() -> CatalogSnapshot:
    # Outside Django's request cycle nobody else tidies this worker thread's connection.
    from django.db import close_old_connections

    close_old_connections()
    try:
        return catalog_snapshot()
    finally:
        close_old_connections()


def _forget() -> None:
    global _held, _builds
    with _build_lock:
        _held = None
        _builds = 0


# Tests start each test without a snapshot (``caches_reset``); the "process" scope is never cleared by an edit, which
# replaces the snapshot instead.
register_cache("errcatalog.catalog.snapshot.held", _forget, scope="process")


# --- Watching the revision --------------------------------------------------------------------------------


def _poll_seconds() -> float:
    return float(settings.ERRCATALOG["CATALOG_POLL_SECONDS"])


def _watch() -> None:
    """Start this process's watcher thread, unless it runs or polling is off (``CATALOG_POLL_SECONDS`` 0)."""
    if _poll_seconds() > 0:
        _watcher.ensure()


def _watch_revision() -> None:
    try:
        while (interval := _poll_seconds()) > 0:
            time.sleep(interval)
            if _poll_seconds() > 0:
                _check_revision()
    finally:
        connection.close()


_watcher = OnDemandThread("errcatalog-catalog-watcher", _watch_revision)


def _check_revision() -> None:
    held = _held
    if held is None or not DATABASE.available():
        return
    try:
        # The watcher keeps its connection for good (CONN_MAX_AGE would have it reconnect every poll when 0); one
        # that broke fails this read and is closed below, and the next poll connects again.
        moved = catalog_revision() != held.revision
    except DATABASE_ERRORS as exc:
        DATABASE.failed(exc)
        DATABASE.degraded("the catalog is served from the snapshot this process holds")
        connection.close()
        return
    if moved:
        _rebuild(unless_current=True)


def _after_fork_in_child() -> None:
    # A forked child (a Celery pool process) has none of its parent's threads (the watcher forgets its own), and
    # none that could release a lock the parent held at the fork.
    global _build_lock
    _build_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)

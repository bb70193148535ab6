"""The snapshot a process serves: rebuilt once per change, off the calls' path, kept when a rebuild fails.

In this process, with the watcher thread switched on where a test needs it (``watching``). Changes made in other
processes reaching a served app: ``tests/config/test_catalog_propagation.py``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from django.db import OperationalError, connection, transaction

from errcatalog.catalog import snapshot as snapshot_module
from errcatalog.catalog.defaults import catalog_load_defaults
from errcatalog.catalog.export import catalog_document_from_db
from errcatalog.catalog.models import ErrorCode, TemplateVariant
from errcatalog.catalog.services import catalog_import, error_code_update
from errcatalog.catalog.snapshot import (
    acatalog_snapshot,
    catalog_changed,
    catalog_snapshot,
    catalog_snapshot_from_db,
    catalog_snapshot_status,
)
from errcatalog.dependencies import DATABASE
from errcatalog.render import Failure, render
from errcatalog.render.entries import CatalogSnapshot
from tests.errcatalog.catalog.synthetic import synthetic_document
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

POLL_SECONDS = 0.05
NEW_TEXT = "The catalog changed while calls were being served."


@pytest.fixture
def loaded():
    catalog_load_defaults(reset=False)
    yield
    DATABASE.reset()


@pytest.fixture
def watching(settings) -> Iterator[None]:
    """This process's watcher thread polls the revision every 50 ms for the test, and is gone after it."""
    settings.ERRCATALOG = {**settings.ERRCATALOG, "CATALOG_POLL_SECONDS": POLL_SECONDS}
    yield
    settings.ERRCATALOG = {**settings.ERRCATALOG, "CATALOG_POLL_SECONDS": 0}
    for thread in threading.enumerate():
        if thread.name == "errcatalog-catalog-watcher":
            thread.join(timeout=10)
            assert not thread.is_alive()


def _message(snapshot: CatalogSnapshot) -> str:
    return render(snapshot, Failure("UNKNOWN_ERROR")).message


def _edit_without_signals(text: str = NEW_TEXT) -> None:
    # As another process, a shell or psql would: nothing in this process hears of it but the revision.
    _written(lambda: TemplateVariant.objects.filter(error_code__code="UNKNOWN_ERROR").update(message=text))


def _written(write: Callable[[], object]) -> None:
    """``write()``, again while the watcher's read holds the table.

    The test database on SQLite is in memory with a shared cache, where a write that meets another thread's read
    fails at once ("database table is locked") instead of waiting as it does on a database file (production's
    SQLite, whose busy timeout waits) or on PostgreSQL.
    """
    deadline = time.monotonic() + 10
    while True:
        try:
            write()
            return
        except OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _builds() -> int:
    return int(catalog_snapshot_status()["builds"] or 0)


def _settle() -> None:
    """Let the watcher poll several times, so that a second build of the same change would have happened."""
    done = threading.Event()
    done.wait(POLL_SECONDS * 8)


def test_once_held_a_call_reads_nothing(loaded, django_assert_num_queries):
    catalog_snapshot()
    with django_assert_num_queries(0):
        for _ in range(100):
            catalog_snapshot()
        asyncio.run(acatalog_snapshot())


def test_an_edit_is_served_by_the_next_call_of_the_process_that_made_it(loaded):
    before = catalog_snapshot()
    builds = _builds()
    network = ErrorCode.objects.get(code="UNKNOWN_ERROR")
    with transaction.atomic():
        # Several rows in one transaction: one rebuild, after the commit.
        error_code_update(
            error_code=network,
            explanation="Edited.",
            variants=[{"name": "default", "locale": "", "message": NEW_TEXT}],
        )
        assert catalog_snapshot() is before
    after = catalog_snapshot()
    assert _message(after) == NEW_TEXT
    assert _message(before) != NEW_TEXT  # a snapshot is frozen: calls holding it keep their text
    assert _builds() == builds + 1


def test_a_change_nobody_announced_is_served_after_a_poll(loaded, watching):
    before = catalog_snapshot()
    builds = _builds()
    _edit_without_signals()
    wait_until(lambda: _message(catalog_snapshot()) == NEW_TEXT, seconds=10, what="the watcher to rebuild")
    assert catalog_snapshot() is not before
    _settle()
    assert _builds() == builds + 1


def test_each_change_is_built_once_while_calls_run_in_many_threads(loaded, watching):
    catalog_snapshot()
    builds = _builds()
    stop = threading.Event()
    seen: set[str] = set()

    def calls() -> None:
        while not stop.is_set():
            seen.add(_message(catalog_snapshot()))

    threads = [threading.Thread(target=calls) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        # One change announced in this process (signals, then catalog_changed after commit) while the watcher
        # polls too, and one nobody announces.
        network = ErrorCode.objects.get(code="UNKNOWN_ERROR")
        _written(
            lambda: error_code_update(
                error_code=network, variants=[{"name": "default", "locale": "", "message": "First."}]
            )
        )
        # The watcher shares the interpreter with eight busy threads: on two cores its build can take many seconds.
        wait_until(lambda: "First." in seen, seconds=30, what="the first change")
        _settle()
        _edit_without_signals("Second.")
        wait_until(lambda: "Second." in seen, seconds=30, what="the second change")
        _settle()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert _builds() == builds + 2


class _SlowBuild:
    """Holds every build until ``release`` is set: a rebuild as slow as the test wants it."""

    def __init__(self, monkeypatch) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        real = snapshot_module.catalog_snapshot_from_db

        def slow(**options) -> CatalogSnapshot:
            self.started.set()
            assert self.release.wait(timeout=60), "the test never released the build"
            return real(**options)

        monkeypatch.setattr(snapshot_module, "catalog_snapshot_from_db", slow)


def _in_thread(target: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=target)
    thread.start()
    return thread


def _rebuild() -> None:
    try:
        catalog_changed()
    finally:
        connection.close()  # this thread's own: the test database must be droppable at the end


def _finishes(work: Callable[[], object]) -> list[object]:
    """Run ``work`` in a thread; fail (rather than hang) if it does not finish while the build is held."""
    results: list[object] = []
    thread = _in_thread(lambda: results.append(work()))
    thread.join(timeout=20)
    assert not thread.is_alive(), "a call waited for the rebuild"
    return results


def test_calls_keep_their_snapshot_while_a_rebuild_is_held_up(loaded, monkeypatch):
    before = catalog_snapshot()
    _edit_without_signals()
    slow = _SlowBuild(monkeypatch)
    rebuild = _in_thread(_rebuild)  # the writer's own rebuild, held inside the build
    try:
        assert slow.started.wait(timeout=20)
        results = _finishes(lambda: [catalog_snapshot() for _ in range(1000)])
        assert all(result is before for result in results[0])
        assert _finishes(lambda: asyncio.run(acatalog_snapshot())) == [before]
    finally:
        slow.release.set()
        rebuild.join(timeout=20)
    assert _message(catalog_snapshot()) == NEW_TEXT


def test_a_failed_rebuild_keeps_the_catalog_served_and_is_retried(loaded, watching, monkeypatch, caplog):
    monkeypatch.setattr("errcatalog.dependencies.RETRY_SECONDS", POLL_SECONDS)
    before = catalog_snapshot()
    real = snapshot_module.catalog_snapshot_from_db
    failures: list[int] = []

    def database_away(**options) -> CatalogSnapshot:
        failures.append(1)
        raise OperationalError("connection to server failed")

    monkeypatch.setattr(snapshot_module, "catalog_snapshot_from_db", database_away)
    _edit_without_signals()
    with caplog.at_level(logging.INFO, logger="errcatalog"):
        wait_until(lambda: len(failures) >= 3, seconds=10, what="the watcher to try again")
        assert catalog_snapshot() is before  # the last good catalog, for every call meanwhile
        catalog_changed()  # the writer's own rebuild fails the same way
        assert catalog_snapshot() is before
        monkeypatch.setattr(snapshot_module, "catalog_snapshot_from_db", real)
        wait_until(lambda: _message(catalog_snapshot()) == NEW_TEXT, seconds=10, what="the retried rebuild")
    messages = [record.getMessage() for record in caplog.records]
    # Logged once for the outage, not once per attempt; and once when it ended.
    assert [m for m in messages if "unreachable" in m] == [
        "The database is unreachable (OperationalError); trying again every 0.05 s"
    ]
    assert (
        messages.count("The database is unavailable: the catalog is served from the snapshot this process holds") == 1
    )
    assert len([m for m in messages if "is reachable again" in m]) == 1
    assert "connection to server failed" not in caplog.text  # an exception's text names hosts; never logged


def test_a_process_that_holds_no_snapshot_builds_nothing_on_a_change(loaded):
    builds = _builds()
    network = ErrorCode.objects.get(code="UNKNOWN_ERROR")
    error_code_update(error_code=network, explanation="Edited by a management command's process.")
    assert _builds() == builds
    assert not connection.in_atomic_block


def test_a_paced_build_is_the_snapshot_of_the_catalog_document(loaded):
    catalog_import(synthetic_document(150, variants=4))  # 600 variants: the build pauses between chunks of rows
    paced = catalog_snapshot_from_db(version="revision 1", pace=True)
    documented = CatalogSnapshot.from_document(catalog_document_from_db(), version="revision 1")
    assert dict(paced.codes) == dict(documented.codes)
    assert dict(paced.hints) == dict(documented.hints)
    assert paced.rules == documented.rules

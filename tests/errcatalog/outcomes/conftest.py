"""Fixtures for outcome tests that need a real Celery worker process next to the test.

``celery_worker_process`` starts ``celery -A config worker --pool=solo`` as a subprocess against the test's own
database and Redis; ``worker_database`` is how that process reaches the test database on both backends;
``celery_redis_app`` points the test's Celery app at the same Redis so ``.delay()`` reaches the worker. Tests
using them must be ``@pytest.mark.django_db(transaction=True)``: the worker only sees committed rows.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from django.db import connection

CELERY = str(Path(sys.executable).with_name("celery"))
REPO_ROOT = Path(__file__).resolve().parents[3]


def wait_until(condition: Callable[[], object], *, seconds: float = 30.0, what: str = "condition") -> None:
    """Poll until ``condition()`` is true; fail the test when it never becomes so (a wait, not a timing check)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class WorkerDatabase:
    """The test database as another process sees it.

    PostgreSQL: the test database itself, by URL. SQLite: pytest-django's test database lives in this process's
    memory, so it is copied to a file the worker opens (``push``) and copied back before the test reads what the
    worker wrote (``pull``), both with SQLite's online backup.
    """

    def __init__(self, folder: Path) -> None:
        settings_dict = connection.settings_dict
        self.vendor = connection.vendor
        if self.vendor == "postgresql":
            self.file = None
            user = quote(settings_dict.get("USER") or "")
            password = settings_dict.get("PASSWORD") or ""
            auth = f"{user}:{quote(password)}@" if password else f"{user}@" if user else ""
            host = settings_dict.get("HOST") or "127.0.0.1"
            port = settings_dict.get("PORT") or 5432
            self.url = f"postgres://{auth}{host}:{port}/{quote(settings_dict['NAME'])}"
        elif self.vendor == "sqlite":
            self.file = folder / "worker.sqlite3"
            self.url = f"sqlite:///{self.file}"
        else:  # pragma: no cover - the project supports these two
            raise AssertionError(f"unsupported database {self.vendor}")

    def push(self) -> None:
        """Make what this test wrote visible to worker processes (SQLite: copy to the worker's file)."""
        if self.file is None:
            return
        connection.ensure_connection()
        with contextlib.closing(sqlite3.connect(self.file)) as target:
            connection.connection.backup(target)

    def pull(self) -> None:
        """Make what worker processes wrote visible to this test (SQLite: copy the worker's file back)."""
        if self.file is None:
            return
        connection.ensure_connection()
        with contextlib.closing(sqlite3.connect(self.file)) as source:
            source.backup(connection.connection)

    def hold_write_lock(self, table: str = "errcatalog_outcomeevent") -> contextlib.AbstractContextManager[None]:
        """Block every writer of ``table`` (SQLite: of the database) until the block ends (readers go on)."""
        return self._pg_lock(table) if self.file is None else self._sqlite_lock()

    def writers_waiting(self) -> int:
        """PostgreSQL: sessions of the test database waiting for a lock. SQLite cannot tell: always 1."""
        if self.file is not None:
            return 1
        import psycopg

        with psycopg.connect(self._conninfo(), autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
        return int(row[0])

    def _conninfo(self) -> str:
        return self.url.replace("postgres://", "postgresql://", 1)

    @contextlib.contextmanager
    def _pg_lock(self, table: str) -> Iterator[None]:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self._conninfo()) as conn:
            conn.execute(sql.SQL("LOCK TABLE {} IN SHARE MODE").format(sql.Identifier(table)))
            try:
                yield
            finally:
                conn.rollback()

    @contextlib.contextmanager
    def _sqlite_lock(self) -> Iterator[None]:
        conn = sqlite3.connect(self.file, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield
            conn.execute("ROLLBACK")
        finally:
            conn.close()


class CeleryWorkerProcess:
    """``celery -A config worker --pool=solo`` in a subprocess; ``start`` waits until it is ready."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env = env
        self.folder = folder
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self._starts = 0

    def start(self, **extra_env: str) -> CeleryWorkerProcess:
        assert self.process is None, "stop or kill the running worker first"
        self._starts += 1
        self.log_path = self.folder / f"worker-{self._starts}.log"
        name = f"test{self._starts}-{uuid.uuid4().hex[:8]}@%h"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(  # noqa: S603 (fixed command line)
                [CELERY, "-A", "config", "worker", "--pool=solo", "-l", "info", "-n", name,
                 "--without-gossip", "--without-mingle", "--without-heartbeat"],
                cwd=REPO_ROOT,
                env={**self.env, **extra_env},
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_until(self._ready, what="the Celery worker to be ready")
        return self

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the Celery worker exited early:\n{self.log()}")
        return b" ready." in self.log_path.read_bytes()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def kill(self) -> None:
        """SIGKILL: the worker gets no chance to finish, acknowledge or clean up anything."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
            self.process = None


def process_environment(*, database_url: str, redis_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a process of ours the test starts (a worker, a web server): production's way, settings
    from variables only, none of the test's own ``ERRCATALOG_*``/``DATABASE_*``/... variables leaking in."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ERRCATALOG_", "DATABASE_", "REDIS_", "CELERY_", "SENTRY_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=database_url,
        DATABASE_CONN_MAX_AGE="0",
        REDIS_URL=redis_url,
        CELERY_BROKER_URL=redis_url or "filesystem://",
        ERRCATALOG_DATA_DIR=str(data_dir),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@pytest.fixture
def worker_database(tmp_path) -> WorkerDatabase:
    return WorkerDatabase(tmp_path)


@pytest.fixture
def celery_worker_process(tmp_path, redis_url, worker_database) -> Iterator[CeleryWorkerProcess]:
    """A worker factory on the test's database and Redis; ``.start(**env)`` runs one, stopped after the test.

    The environment reproduces production's (the same command, settings from variables only); the test's Redis
    database is emptied by ``redis_url`` before and after, which purges the Celery queues too.
    """
    data_dir = tmp_path / "worker-data"
    data_dir.mkdir()
    env = process_environment(database_url=worker_database.url, redis_url=redis_url, data_dir=data_dir)
    worker_database.push()  # the schema (SQLite); tests that add rows before starting a worker push again
    worker = CeleryWorkerProcess(env, tmp_path)
    yield worker
    worker.stop()


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


@pytest.fixture
def celery_redis_app(redis_url) -> Iterator[object]:
    """The project's Celery app sending to the test's Redis for the test; yields the app."""
    with celery_app_on(redis_url, {}) as app:
        yield app


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

"""Processes of ours a test starts beside it (a Celery worker, a web server) and the environment they run in."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from django.db import connection

from tests.support.waiting import wait_until

CELERY = str(Path(sys.executable).with_name("celery"))


REPO_ROOT = Path(__file__).resolve().parents[2]


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

"""Helpers for the recorder tests: a throwaway Redis server, a private Celery broker folder, two test tools.

Kept out of ``tests/conftest.py`` because only the recorder tests use them.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import redis

from errcatalog.errors import ApiServerError
from mcpserver.registry import tool

# Toolset switched on only by the MCP pipeline test.
RECORDER_TOOLSET = "recorder_test"


@tool(toolset=RECORDER_TOOLSET, description="Say hello.", input_schema={"type": "object", "properties": {}})
def recorder_hello() -> str:
    return "hello"


@tool(
    toolset=RECORDER_TOOLSET,
    description="Fetch from an upstream that answers 502.",
    input_schema={"type": "object", "properties": {}},
)
def recorder_upstream_broken() -> str:
    raise ApiServerError(502, "upstream broke")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(condition: Callable[[], object], *, seconds: float = 15.0, what: str = "condition") -> None:
    """Poll until ``condition()`` is true; fail the test when it never becomes so (a wait, not a timing check)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class ThrowawayRedis:
    """A ``redis-server`` subprocess on a fixed free port, that a test can kill and restart.

    Without persistence by default; ``appendonly=True`` keeps what it acknowledged across a kill, as in production.
    """

    def __init__(self, workdir: Path, *, appendonly: bool = False) -> None:
        self.port = free_port()
        self.workdir = workdir
        # As docker-compose runs it: what Redis acknowledged survives a kill and is back after ``start``.
        self.appendonly = appendonly
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.process = subprocess.Popen(  # noqa: S603 (fixed command line)
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir), "--appendonly", "yes" if self.appendonly else "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        try:
            wait_for(lambda: self._ping(client), what=f"redis-server on port {self.port}")
        finally:
            client.close()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None

    @staticmethod
    def _ping(client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False


@contextlib.contextmanager
def throwaway_redis(workdir: Path) -> Iterator[ThrowawayRedis]:
    server = ThrowawayRedis(workdir)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@contextlib.contextmanager
def celery_filesystem_broker(folder: Path, *, control_folder: Path | None = None) -> Iterator[object]:
    """Point the project's Celery app at a filesystem broker in ``folder`` for the block; yields the app."""
    from tests.support.celery import celery_app_on

    folder.mkdir(parents=True, exist_ok=True)
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "store_processed": False,
        "control_folder": str(control_folder or folder / "control"),
    }
    with celery_app_on("filesystem://", options) as app:
        yield app


def read_task_messages(app, *, queue: str = "celery") -> list[tuple[str, list]]:
    """Consume every message waiting in ``queue`` through kombu: a list of (task name, positional args)."""
    found = []
    with app.connection_for_read() as connection:
        simple = connection.SimpleQueue(queue)
        try:
            while True:
                try:
                    message = simple.get(block=False)
                except simple.Empty:
                    return found
                args, _kwargs, _embed = message.decode()
                found.append((message.headers["task"], args))
                message.ack()
        finally:
            simple.close()

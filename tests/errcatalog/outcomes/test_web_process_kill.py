"""A served web process SIGKILLed under MCP load loses at most ``OUTCOMES["MAX_UNSENT"]`` outcome events.

The process is the production command (uvicorn serving ``config.asgi``) in a subprocess, loaded by the SDK's real
client over HTTP; the test counts the calls that were answered, kills the process in the middle of the load, then
stores what reached the buffer (the spool folder on Celery's filesystem broker, or the Redis stream) and counts
it. Count-based, not timing-based: answered minus stored must not exceed the setting.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from errcatalog.catalog.defaults import catalog_load_defaults
from errcatalog.outcomes import ingest
from errcatalog.outcomes.models import OutcomeRecord
from tests.support.processes import REPO_ROOT
from tests.support.recorder import free_port
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

MAX_UNSENT = 100
# Calls answered before the kill: many times the bound, so a process that held them all would fail clearly.
KILL_AFTER_ANSWERED = 1200
CONCURRENCY = 8


class ServedProcess:
    """``uvicorn config.asgi:application`` in a subprocess with settings from its environment only."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(  # noqa: S603 (fixed command line)
                [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1",
                 "--port", str(self.port), "--lifespan", "on", "--log-level", "warning"],
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_until(self._listening, what="the web process to listen")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def _listening(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the web process exited early:\n{self.log_path.read_text(errors='replace')}")
        with contextlib.closing(socket.socket()) as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)


async def load_until_killed(server: ServedProcess) -> int:
    """Call a catalog tool from ``CONCURRENCY`` clients; SIGKILL the server once enough calls were answered.

    Returns the number of calls answered (a result received, not an error).
    """
    answered = 0
    killed = asyncio.Event()

    async def one_client() -> None:
        nonlocal answered
        with contextlib.suppress(Exception):  # the kill cuts every connection: that is the point
            async with (
                httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http,
                Client(streamable_http_client(server.url, http_client=http)) as client,
            ):
                while not killed.is_set():
                    result = await client.call_tool("explain_error", {"code": "NETWORK_ERROR"})
                    if killed.is_set():  # answered after the kill was decided: leave it out of both counts
                        return
                    assert not result.is_error
                    answered += 1
                    if answered >= KILL_AFTER_ANSWERED:
                        killed.set()
                        server.kill()

    await asyncio.gather(*(one_client() for _ in range(CONCURRENCY)))
    assert killed.is_set(), "the load stopped before the kill (see the web process's log)"
    return answered


@pytest.mark.parametrize("broker", ["filesystem", "redis"])
def test_a_web_process_killed_under_load_loses_at_most_max_unsent_events(
    broker, worker_database, redis_url, settings, tmp_path
):
    catalog_load_defaults(reset=False)
    worker_database.push()
    data_dir = tmp_path / "web-data"
    data_dir.mkdir()
    buffer_url = redis_url if broker == "redis" else ""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ERRCATALOG_", "DATABASE_", "REDIS_", "CELERY_", "SENTRY_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=worker_database.url,
        DATABASE_CONN_MAX_AGE="0",
        REDIS_URL=buffer_url,
        CELERY_BROKER_URL=buffer_url or "filesystem://",
        ERRCATALOG_DATA_DIR=str(data_dir),
        ERRCATALOG_MCP_AUTH="0",
        ERRCATALOG_MCP_RATE_LIMIT="0",
        ERRCATALOG_MCP_TOOLSETS="catalog",
        # Only the count bound may send: without it the process would hold every event until the kill.
        ERRCATALOG_OUTCOMES_FLUSH_MS="600000",
        ERRCATALOG_OUTCOMES_MAX_UNSENT=str(MAX_UNSENT),
    )
    server = ServedProcess(env, tmp_path / "web.log")
    try:
        answered = asyncio.run(load_until_killed(server))
    finally:
        server.kill()

    # Store what reached the buffer, as a worker would (what config/settings.py gives the served process).
    settings.REDIS_URL = buffer_url
    settings.OUTCOMES = {**settings.OUTCOMES, "SPOOL_DIR": "" if buffer_url else str(data_dir / "outcomes" / "spool")}
    deadline = time.monotonic() + 120
    while ingest.drain():
        assert time.monotonic() < deadline, "the buffer did not empty"
    stored = OutcomeRecord.objects.filter(tool="explain_error").count()

    lost = answered - stored
    print(f"{broker}: {answered} calls answered, {stored} events stored, {lost} lost (bound {MAX_UNSENT})")
    assert answered >= KILL_AFTER_ANSWERED
    assert lost <= MAX_UNSENT
    # Calls recorded but cut off before their answer arrived may be stored too: at most one per client.
    assert stored <= answered + CONCURRENCY

"""``./dev up`` run as a new user runs it, for tests of the first hour: the served app, its logs and what it prints.

The command runs in a process group of its own on a free port, with a throwaway data folder (SQLite, the embedded
Celery broker, the worker's and beat's logs) and none of the caller's database or Redis variables; stopping it sends
SIGTERM to the group, as Ctrl+C in a terminal would. The processes it started are found by that data folder, which
each of them carries in its environment (``processes``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

REPO_ROOT = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "first-hour-admin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class DevUp:
    base_url: str
    stdout_path: Path
    stderr_path: Path
    process: subprocess.Popen
    data_dir: Path  # ERRCATALOG_DATA_DIR: the SQLite file, the Celery broker's folders, log/worker.log and beat.log
    known_key: str = ""  # the quickstart token's key, when an earlier start printed it (``start_set_up``)

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def printed(self) -> str:
        return self.stdout_path.read_text()

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def printed_block(self, heading_start: str) -> str:
        """The block printed under the heading line that starts with ``heading_start``, up to the blank line."""
        text = self.printed()
        start = text.index("\n" + heading_start) + 1
        body = text[text.index("\n", start) + 1 :]
        return body.split("\n\n", 1)[0].rstrip("\n")

    def printed_key(self) -> str:
        return re.search(r"\(shown once\): (ec_\S+)", self.printed()).group(1)

    def quickstart_key(self) -> str:
        """The quickstart MCP token's key: printed by this start, or by the one that set its data folder up."""
        return self.known_key or self.printed_key()

    def log_tail(self, name: str, lines: int = 40) -> str:
        """The last ``lines`` lines of ``log/<name>`` (``worker.log``, ``beat.log``), or a line saying it is missing."""
        path = self.data_dir / "log" / name
        if not path.is_file():
            return f"({path} does not exist)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def start(
    folder: Path,
    *,
    seconds: float = 180.0,
    admin_password: str | None = ADMIN_PASSWORD,
    port: int | None = None,
    env: dict[str, str] | None = None,
) -> DevUp:
    """``./dev up`` with its data in ``folder``; returns once the server answers HTTP.

    The first admin's password is ``admin_password`` (``ERRCATALOG_ADMIN_PASSWORD``); with None, ``./dev up`` makes
    one and prints it, as it does for a new user. ``env`` adds variables (``ERRCATALOG_MCP_RATE_LIMIT``).
    """
    served = launch(folder, admin_password=admin_password, port=port, env=env)
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(f"{served.base_url}/healthz", timeout=2)  # noqa: S310 (http://127.0.0.1)
            return served
        except urllib.error.HTTPError:
            return served  # any HTTP answer means the server is up
        except OSError:
            if served.process.poll() is not None or time.monotonic() > deadline:
                stop(served)
                raise RuntimeError(f"./dev up did not serve:\n{served.printed()}\n{served.stderr()}") from None
            time.sleep(0.2)


_set_up: tuple[Path, str] | None = None  # a data folder set up by ./dev up, and the key it printed


def start_set_up(folder: Path, **options) -> DevUp:
    """``start`` on a copy of a data folder that ``./dev up`` set up already (migrated, the catalog loaded, static
    files collected, the admin and the token made: once per test process), so this start sets up nothing."""
    global _set_up
    if _set_up is None:
        template = Path(tempfile.mkdtemp(prefix="dev-up-set-up-"))
        atexit.register(shutil.rmtree, template, ignore_errors=True)
        first = start(template)
        stop(first)
        _set_up = (first.data_dir, first.printed_key())
    data_dir, key = _set_up
    shutil.copytree(data_dir, folder / "data", ignore=shutil.ignore_patterns("log", "celery", "celerybeat-*"))
    served = start(folder, **options)
    served.known_key = key
    return served


def launch(
    folder: Path,
    *,
    admin_password: str | None = ADMIN_PASSWORD,
    port: int | None = None,
    env: dict[str, str] | None = None,
) -> DevUp:
    """``./dev up`` started as ``start`` starts it, without waiting for anything."""
    port = port or free_port()
    data_dir = folder / "data"
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DATABASE_", "REDIS_", "CELERY_", "SENTRY_", "ERRCATALOG_", "DJANGO_"))
    }
    environment.update(
        HOST="127.0.0.1",
        PORT=str(port),
        ERRCATALOG_DATA_DIR=str(data_dir),
        **(env or {}),
    )
    if admin_password is not None:
        environment["ERRCATALOG_ADMIN_PASSWORD"] = admin_password
    stdout_path, stderr_path = folder / "stdout.txt", folder / "stderr.txt"
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        process = subprocess.Popen(  # noqa: S603 (the repository's own ./dev)
            [str(REPO_ROOT / "dev"), "up"],
            cwd=REPO_ROOT,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    return DevUp(f"http://127.0.0.1:{port}", stdout_path, stderr_path, process, data_dir)


def stop(served: DevUp) -> None:
    """SIGTERM to the whole group, as Ctrl+C would; waits for the exit, then kills whatever it left running (the
    tests of stopping check that there is nothing)."""
    if served.process.poll() is None:
        os.killpg(served.process.pid, signal.SIGTERM)
        try:
            served.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(served.process.pid, signal.SIGKILL)
            served.process.wait()
    for pid in processes(served.data_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# --- The processes it started -------------------------------------------------------------------------------------


def processes(data_dir: Path) -> dict[int, str]:
    """Every live process started for ``data_dir`` (its environment names it as ERRCATALOG_DATA_DIR), by pid: its
    command line, arguments separated by spaces."""
    marker = f"ERRCATALOG_DATA_DIR={data_dir}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if command:  # a zombie has none: it has exited, and waits only to be reaped
            found[int(entry.name)] = command
    return found


def parent_of(pid: int) -> int:
    """The parent's pid of a live process (0 once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def stack(served: DevUp) -> dict[str, int]:
    """The pids of what ``./dev up`` runs, of those running: ``web`` (config.devserver), ``worker`` (the Celery
    worker's main process, not its pool process) and ``beat``."""
    running = processes(served.data_dir)
    found = {}
    for pid, command in running.items():
        if "-m config.devserver" in command:
            found["web"] = pid
        elif " worker " in f"{command} " and " worker " not in f"{running.get(parent_of(pid), '')} ":
            found["worker"] = pid
        elif " beat " in f"{command} ":
            found["beat"] = pid
    return found


def wait_for_worker_and_beat(served: DevUp, *, seconds: float = 300.0) -> dict[str, int]:
    """Wait until the worker says it is ready and beat that it started (in their logs, since this start); returns
    ``stack(served)``."""
    worker_log, beat_log = served.data_dir / "log" / "worker.log", served.data_dir / "log" / "beat.log"
    deadline = time.monotonic() + seconds
    while True:
        running = stack(served)
        if (
            running.keys() == {"web", "worker", "beat"}
            and worker_log.is_file()
            and worker_log.read_text(errors="replace").count(" ready.") >= 1
            and beat_log.is_file()
            and "beat: Starting..." in beat_log.read_text(errors="replace")
        ):
            return running
        assert served.process.poll() is None, f"./dev up exited:\n{served.stderr()}"
        assert time.monotonic() < deadline, f"the worker and beat did not start:\n{served.log_tail('worker.log')}"
        time.sleep(0.2)


# --- Calls, and the outcomes they left ---------------------------------------------------------------------------


async def call_under_load(
    served: DevUp, *, calls: int, concurrency: int, disturb_at: int, disturb: Callable[[], None]
) -> int:
    """``calls`` calls of the catalog's ``explain_error`` tool from ``concurrency`` clients of the SDK over HTTP, with
    the printed quickstart key; once ``disturb_at`` calls were answered, ``disturb()`` runs in a thread while the
    calls go on. Returns the calls answered: all of them (a call that fails, fails the test)."""
    answered = 0
    started: asyncio.Future[None] | None = None
    remaining = iter(range(calls))

    async def one_client() -> None:
        nonlocal answered, started
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {served.quickstart_key()}"}, timeout=30) as http,
            Client(streamable_http_client(served.mcp_url, http_client=http)) as client,
        ):
            for _ in remaining:
                result = await client.call_tool("explain_error", {"code": "NETWORK_ERROR"})
                assert not result.is_error, result
                answered += 1
                if answered >= disturb_at and started is None:
                    started = asyncio.ensure_future(asyncio.to_thread(disturb))

    await asyncio.gather(*(one_client() for _ in range(concurrency)))
    assert started is not None, "the calls ended before the disturbance"
    await started
    return answered


def outcomes_stored(served: DevUp, tool: str) -> int:
    """The outcome events of ``tool`` stored in the data folder's SQLite database."""
    with contextlib.closing(sqlite3.connect(f"file:{served.data_dir / 'errcatalog.sqlite3'}?mode=ro", uri=True)) as db:
        return db.execute("SELECT count(*) FROM errcatalog_outcomeevent WHERE tool = ?", (tool,)).fetchone()[0]


def wait_for_outcomes(served: DevUp, tool: str, expected: int, *, seconds: float = 120.0) -> int:
    """Wait until ``expected`` outcome events of ``tool`` are stored (no longer than ``seconds``); returns the count."""
    deadline = time.monotonic() + seconds
    while (stored := outcomes_stored(served, tool)) < expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return stored

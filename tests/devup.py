"""``./dev up`` run as a new user runs it, for tests of the first hour: the served app, its logs and what it prints.

The command runs in a process group of its own on a free port, with a throwaway data folder (SQLite, the embedded
Celery broker, the worker's and beat's logs) and none of the caller's database or Redis variables; stopping it sends
SIGTERM to the group, as Ctrl+C in a terminal would.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
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

    def log_tail(self, name: str, lines: int = 40) -> str:
        """The last ``lines`` lines of ``log/<name>`` (``worker.log``, ``beat.log``), or a line saying it is missing."""
        path = self.data_dir / "log" / name
        if not path.is_file():
            return f"({path} does not exist)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def start(folder: Path, *, seconds: float = 180.0, admin_password: str | None = ADMIN_PASSWORD) -> DevUp:
    """``./dev up`` with its data in ``folder``; returns once the server answers HTTP.

    The first admin's password is ``admin_password`` (``ERRCATALOG_ADMIN_PASSWORD``); with None, ``./dev up`` makes
    one and prints it, as it does for a new user.
    """
    port = free_port()
    data_dir = folder / "data"
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DATABASE_", "REDIS_", "CELERY_", "SENTRY_", "ERRCATALOG_", "DJANGO_"))
    }
    env.update(
        HOST="127.0.0.1",
        PORT=str(port),
        ERRCATALOG_DATA_DIR=str(data_dir),
    )
    if admin_password is not None:
        env["ERRCATALOG_ADMIN_PASSWORD"] = admin_password
    stdout_path, stderr_path = folder / "stdout.txt", folder / "stderr.txt"
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        process = subprocess.Popen(  # noqa: S603 (the repository's own ./dev)
            [str(REPO_ROOT / "dev"), "up"],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    served = DevUp(f"http://127.0.0.1:{port}", stdout_path, stderr_path, process, data_dir)
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(f"{served.base_url}/healthz", timeout=2)  # noqa: S310 (http://127.0.0.1)
            return served
        except urllib.error.HTTPError:
            return served  # any HTTP answer means the server is up
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop(served)
                raise RuntimeError(f"./dev up did not serve:\n{served.printed()}\n{served.stderr()}") from None
            time.sleep(0.2)


def stop(served: DevUp) -> None:
    """SIGTERM to the whole group (uvicorn, the Celery worker and beat), as Ctrl+C would; waits for the exit."""
    if served.process.poll() is None:
        os.killpg(served.process.pid, signal.SIGTERM)
        try:
            served.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(served.process.pid, signal.SIGKILL)
            served.process.wait()

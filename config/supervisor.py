"""``./dev up``'s processes, started, kept running and stopped together: the web process, the Celery worker and beat.

``python -m config.supervisor HOST PORT LOG_FOLDER [UVICORN OPTION ...]`` is what ``./dev up`` becomes (``exec``):

- when HOST:PORT cannot be bound, it says so in one line on stderr and exits 1, before anything is set up;
- it starts the web process (``config.devserver``: the setup, then uvicorn), and once that answers HTTP the Celery
  worker and beat, whose output goes to ``LOG_FOLDER/worker.log`` and ``beat.log``;
- a worker or beat that exits is started again, and stderr says so; the pause before a restart doubles with each
  exit in a row (``FIRST_RESTART_SECONDS`` up to ``LONGEST_RESTART_SECONDS``), so one that cannot start does not
  spin, and a process that ran ``STEADY_SECONDS`` starts its count again;
- when the web process exits, it stops the worker and beat and exits with the web process's status;
- on SIGINT (Ctrl+C), SIGTERM or SIGHUP (the terminal closed) it stops all three, waits for them, and exits with
  128 + the signal's number.

Each child runs in a session of its own, so a signal meant for ``./dev up`` reaches the children only as this
process's SIGTERM: the terminal's SIGHUP would end uvicorn without its graceful shutdown (losing the outcomes it
holds) and make a Celery worker restart itself, and Ctrl+C would reach each child twice. A child is asked to stop
with SIGTERM and killed, with everything in its process group, after ``STOP_SECONDS``. On Linux the kernel also
sends a child SIGTERM when this process dies without stopping it (SIGKILL).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

FIRST_RESTART_SECONDS = 1.0
LONGEST_RESTART_SECONDS = 60.0
STEADY_SECONDS = 60.0
# Longer than uvicorn's graceful shutdown (config.devserver.UVICORN_OPTIONS: 20 s), so open requests can finish.
STOP_SECONDS = 30.0
_POLL_SECONDS = 0.1
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def port_problem(host: str, port: str) -> str | None:
    """Why HOST:PORT cannot be served, in one line, or None when it can be bound (as uvicorn binds it)."""
    try:
        number = int(port)
        (family, kind, protocol, _, address), *_ = socket.getaddrinfo(
            host, number, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except ValueError:
        return f"errcatalog: PORT must be a number, not {port!r}"
    except OSError as error:
        return f"errcatalog: cannot serve on {host}: {error.strerror or error}"
    with socket.socket(family, kind, protocol) as sock:
        # As uvicorn binds: a port whose last connections wait in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return f"errcatalog: port {number} on {host} is in use; stop what uses it or set PORT={number + 1}"
            return f"errcatalog: cannot serve on {host} port {number}: {error.strerror or error}"
    return None


def describe_exit(status: int) -> str:
    """A child's exit as people read it: ``status 1``, ``killed by SIGKILL``."""
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"status {status}"


def restart_delay(exits_in_a_row: int) -> float:
    """The pause before restarting a process that exited ``exits_in_a_row`` times in a row (1 for the first)."""
    return min(FIRST_RESTART_SECONDS * 2 ** (exits_in_a_row - 1), LONGEST_RESTART_SECONDS)


def _stop_with_parent(parent: int) -> Callable[[], None]:
    def in_child() -> None:
        # The kernel sends SIGTERM to this child when the supervisor dies, however it dies; a supervisor already
        # gone before this ran would never send it.
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)

    return in_child


@dataclass
class Child:
    """One process of the stack, and what the supervisor knows of it."""

    name: str
    argv: list[str]
    log: Path | None = None  # None: this process's stdout and stderr
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    exits_in_a_row: int = 0
    restart_at: float | None = None
    status: int | None = field(default=None, init=False)

    def start(self) -> None:
        output = self.log.open("ab") if self.log else None
        try:
            self.process = subprocess.Popen(  # noqa: S603 (this interpreter and the venv's celery, fixed arguments)
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT if output else None,
                start_new_session=True,
                preexec_fn=_stop_with_parent(os.getpid()) if sys.platform == "linux" else None,
            )
        finally:
            if output:
                output.close()
        self.started_at = time.monotonic()
        self.restart_at = None
        self.status = None

    def exited(self) -> int | None:
        """The child's status once it exited (its process group swept), or None while it runs or waits."""
        if self.process is None or self.status is not None:
            return self.status
        status = self.process.poll()
        if status is not None:
            self.status = status
            self._sweep()
        return status

    def ask_to_stop(self) -> None:
        if self.process is not None and self.exited() is None:
            self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.process is not None and self.exited() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.exited()

    def _sweep(self) -> None:
        # What the child started and left behind (a Celery worker killed with SIGKILL leaves its pool process).
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)


class Supervisor:
    def __init__(self, host: str, port: str, logs: Path, uvicorn_arguments: list[str]) -> None:
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{port}/healthz"
        python = sys.executable
        celery = str(Path(python).with_name("celery"))
        self.web = Child("the web server", [python, "-m", "config.devserver", host, port, str(logs)])
        self.web.argv += uvicorn_arguments
        self.worker = Child(
            "the Celery worker",
            [celery, "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", "1"],
            log=logs / "worker.log",
        )
        self.beat = Child("Celery beat", [celery, "-A", "config", "beat", "--loglevel", "INFO"], log=logs / "beat.log")
        self.signals: list[int] = []

    def run(self) -> int:
        for number in _STOP_SIGNALS:
            signal.signal(number, lambda number, frame: self.signals.append(number))
        try:
            return self._serve()
        finally:
            self._stop_all()

    def _serve(self) -> int:
        self.web.start()
        # The worker and beat start once the server answers, so they do not slow its start.
        while not self._answers():
            if self.signals:
                return 128 + self.signals[0]
            if (status := self.web.exited()) is not None:
                return _shell_status(status)
            time.sleep(_POLL_SECONDS)
        self.worker.start()
        self.beat.start()
        while not self.signals:
            if (status := self.web.exited()) is not None:
                return _shell_status(status)
            for child in (self.worker, self.beat):
                self._keep_running(child)
            time.sleep(_POLL_SECONDS)
        return 128 + self.signals[0]

    def _answers(self) -> bool:
        try:
            urllib.request.urlopen(self.url, timeout=2)  # noqa: S310 (http:// on the host it serves)
        except urllib.error.HTTPError:
            return True  # any HTTP answer means the server is up
        except OSError:
            return False
        return True

    def _keep_running(self, child: Child) -> None:
        now = time.monotonic()
        if child.restart_at is not None:
            if now >= child.restart_at:
                child.start()
            return
        status = child.exited()
        if status is None:
            return
        if now - child.started_at >= STEADY_SECONDS:
            child.exits_in_a_row = 0
        child.exits_in_a_row += 1
        delay = restart_delay(child.exits_in_a_row)
        child.restart_at = now + delay
        print(
            f"errcatalog: {child.name} exited ({describe_exit(status)}); restarting it in {delay:g} s"
            f" (see {child.log})",
            file=sys.stderr,
            flush=True,
        )

    def _stop_all(self) -> None:
        children = (self.web, self.worker, self.beat)
        for child in children:
            child.ask_to_stop()
        deadline = time.monotonic() + STOP_SECONDS
        while any(child.exited() is None for child in children):
            # A second Ctrl+C (or any stop signal) while stopping: stop now.
            if time.monotonic() > deadline or len(self.signals) > 1:
                for child in children:
                    child.kill()
                break
            time.sleep(_POLL_SECONDS)


def _shell_status(status: int) -> int:
    return 128 - status if status < 0 else status


def main(argv: list[str]) -> int:
    host, port, logs, *uvicorn_arguments = argv
    if problem := port_problem(host, port):
        print(problem, file=sys.stderr)
        return 1
    Path(logs).mkdir(parents=True, exist_ok=True)
    return Supervisor(host, port, Path(logs), uvicorn_arguments).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

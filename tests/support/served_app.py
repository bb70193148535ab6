"""The application as production runs it, for tests that take its dependencies away: ``uvicorn
config.asgi:application`` in a subprocess on a free port, configured from its environment only.

Unlike ``tests.support.mcp_endpoint``'s in-process server, this one has its own settings (its own Redis URL, its
own database), its own process-wide state (catalog snapshot, token cache, outcome recorder) and its own log, which
tests read to check what it said about an outage.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2

from tests.support.processes import REPO_ROOT, process_environment
from tests.support.recorder import free_port
from tests.support.waiting import wait_until

UVICORN = str(Path(sys.executable).with_name("uvicorn"))


class ServedApp:
    """``uvicorn config.asgi:application`` in a subprocess; ``start`` waits until it answers HTTP."""

    def __init__(self, env: dict[str, str], folder: Path, *, args: tuple[str, ...] = ()) -> None:
        self.env = env
        self.args = args  # more of uvicorn's options (``--workers 2``)
        self.port = free_port()
        self.log_path = folder / "web.log"
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def start(self) -> ServedApp:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(  # noqa: S603 (fixed command line)
                [UVICORN, "config.asgi:application", "--host", "127.0.0.1", "--port", str(self.port),
                 "--log-level", "warning", *self.args],
                cwd=REPO_ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_until(self._answers, seconds=90, what="the web server to answer")
        return self

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the web server exited early:\n{self.log()}")
        try:
            httpx2.get(f"{self.base_url}/health/", timeout=2)
        except httpx2.TransportError:
            return False
        return True

    def get(self, path: str, *, key: str | None = None) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx2.get(f"{self.base_url}{path}", headers=headers, timeout=10)

    def post(self, path: str, body: dict, *, key: str | None = None) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx2.post(f"{self.base_url}{path}", json=body, headers=headers, timeout=10)

    def health(self) -> dict:
        return self.get("/health/").json()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None


# --- Setting one up from the command line, as an operator does ---------------------------------------------------


def manage(env: dict[str, str], *args: str) -> str:
    """``manage.py ARGS`` in a process of its own with ``env``; its output (the test fails if it fails)."""
    done = subprocess.run(  # noqa: S603 (fixed command line)
        [sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def add_classification_rule(env: dict[str, str], *, position: int, code: str, **conditions: str) -> None:
    """A classification rule in the database of the app ``env`` configures, added as an operator adds one from
    ``manage.py shell`` (through the service every writer calls): ``code`` by name, ``conditions`` as the rule's
    fields (``upstream``, ``tool``, ``kind``, ``pattern`` ...)."""
    fields = "".join(f", {name}={value!r}" for name, value in conditions.items())
    manage(
        env,
        "shell",
        "--no-imports",
        "-c",
        "from errcatalog.catalog.models import ErrorCode; "
        "from errcatalog.catalog.services import classification_rule_create; "
        f"classification_rule_create(position={position}, error_code=ErrorCode.objects.get(code={code!r}){fields})",
    )


def embedded_environment(data_dir: Path, **extra: str) -> dict[str, str]:
    """The embedded default as ``./dev up`` sets it up (a SQLite file in ``data_dir``, no Redis), migrated and with
    the default catalog; ``extra`` variables on top."""
    data_dir.mkdir(exist_ok=True)
    env = process_environment(database_url="", redis_url="", data_dir=data_dir, LOG_LEVEL="INFO")
    del env["DATABASE_URL"]  # the default: a SQLite file in the data folder
    env.update(extra)
    database = data_dir / EMBEDDED_DATABASE
    if _embedded_template:  # the session's first setup, copied: the same file, without two Django startups
        _copy_database(_embedded_template[0], database)
        return env
    manage(env, "migrate", "--no-input", "--verbosity", "0")
    manage(env, "catalog_load_defaults", "--verbosity", "0")
    folder = tempfile.mkdtemp(prefix="errcatalog-embedded-")
    atexit.register(shutil.rmtree, folder, True)
    _embedded_template.append(Path(folder) / EMBEDDED_DATABASE)
    _copy_database(database, _embedded_template[0])
    return env


# The SQLite file of the embedded default, in its data folder (``config.settings``).
EMBEDDED_DATABASE = "errcatalog.sqlite3"
# A migrated database with the default catalog, made by the session's first ``embedded_environment``.
_embedded_template: list[Path] = []


def _copy_database(source: Path, target: Path) -> None:
    with contextlib.closing(sqlite3.connect(source)) as reader, contextlib.closing(sqlite3.connect(target)) as writer:
        reader.backup(writer)


def new_token(env: dict[str, str], name: str, *, tool_scope: list[str] | None = None, metrics: bool = False) -> str:
    """A client token of the user ``agent-owner`` (created the first time), made in a process of its own;
    ``metrics``: one that may read the metrics (the API's and ``/metrics``)."""
    return (
        manage(
            env,
            "shell",
            "--no-imports",
            "-c",
            "from django.contrib.auth.models import User; from errcatalog.access.tokens import client_token_create; "
            "user, _ = User.objects.get_or_create(username='agent-owner'); "
            f"print(client_token_create(user=user, name={name!r}, tool_scope={tool_scope or []!r}, "
            f"can_read_metrics={metrics!r})[1])",
        )
        .strip()
        .splitlines()[-1]
    )

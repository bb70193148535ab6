"""The app served with the conformance suite's fixtures on, for the conformance tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# One process for both commands: each Django start-up costs seconds.
PREPARE_DATABASE = (
    "import django; django.setup(); from django.core.management import call_command; "
    "call_command('migrate', interactive=False, verbosity=0); call_command('catalog_load_defaults', verbosity=0)"
)


def _environ(data_dir: Path, **env: str) -> dict[str, str]:
    # Only the settings given here: no toolsets, database or auth choice leaks in from the caller's environment.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ERRCATALOG_") and k != "DATABASE_URL"}
    return environ | {"DJANGO_SETTINGS_MODULE": "config.settings", "ERRCATALOG_DATA_DIR": str(data_dir)} | env


def prepared(path: Path, *commands: str) -> Path:
    """``path`` with a migrated SQLite database holding the default catalog, then ``commands`` run (Python)."""
    script = "; ".join((PREPARE_DATABASE, *commands))
    subprocess.run(  # noqa: S603 (our own interpreter and a fixed script)
        [sys.executable, "-c", script], cwd=ROOT, env=_environ(path), check=True, capture_output=True
    )
    return path


def serve(data_dir: Path, **env: str) -> Iterator[str]:
    """Run the app on a free port against ``data_dir``; yield its /mcp URL."""
    environ = _environ(data_dir, ERRCATALOG_MCP_AUTH="0", **env)
    port = _free_port()
    uvicorn = Path(sys.executable).with_name("uvicorn")
    log_path = data_dir / f"server-{port}.log"
    log = log_path.open("w")
    server = subprocess.Popen(  # noqa: S603 (the venv's uvicorn, as ./dev up runs it)
        [str(uvicorn), "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=environ,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"The app did not start: {log_path.read_text()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()

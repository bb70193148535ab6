"""``./dev``, the entry point people and CI use: dependencies synced only when the lock changed; a second ``./dev up``
on the same data that sets up nothing again and starts without warnings; every way of stopping ``./dev up`` stops
every process it started; a port that is taken refused in one line before anything is set up.

The sync test runs a copy of ``./dev`` in a folder of its own, with a ``uv`` that records its calls and a
``.venv/bin/python`` that only prints its arguments, so it checks the script's logic in a second; the ``./dev up``
tests run the real thing (tests/support/devup.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import devup

FAKE_UV = """#!/bin/sh
# Records each call; "sync" makes the environment a real sync would.
echo "$*" >> "$(dirname "$0")/uv-calls.txt"
if [ "$1" = sync ]; then mkdir -p .venv/bin && cp "$(dirname "$0")/python" .venv/bin/python; fi
"""
FAKE_PYTHON = '#!/bin/sh\necho "python $*"\n'


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(devup.REPO_ROOT / "dev", project / "dev")
    (project / "uv.lock").write_text("version = 1\n")
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n')
    tools = tmp_path / "bin"
    tools.mkdir()
    for name, text in (("uv", FAKE_UV), ("python", FAKE_PYTHON)):
        (tools / name).write_text(text)
        (tools / name).chmod(0o755)
    return project


def _dev(project: Path, *args: str) -> subprocess.CompletedProcess:
    tools = project.parent / "bin"
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(  # noqa: S603 (a copy of the repository's ./dev)
        [str(project / "dev"), *args], cwd=project, env=env, capture_output=True, text=True, timeout=60, check=True
    )


def _syncs(project: Path) -> int:
    calls = project.parent / "bin" / "uv-calls.txt"
    return sum(line.startswith("sync") for line in calls.read_text().splitlines()) if calls.exists() else 0


def test_dev_manage_syncs_only_when_the_lock_or_project_file_changed(tmp_path):
    project = _project(tmp_path)
    first = _dev(project, "manage", "check")
    assert "installing dependencies from uv.lock" in first.stderr and first.stdout == "python manage.py check\n"
    assert _syncs(project) == 1
    again = _dev(project, "manage", "check")
    assert again.stderr == "" and _syncs(project) == 1  # nothing changed: no sync, no message
    (project / "uv.lock").write_text("version = 1\n# a new dependency\n")
    _dev(project, "manage", "check")
    assert _syncs(project) == 2
    _dev(project, "manage", "check")
    (project / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    _dev(project, "manage", "check")
    assert _syncs(project) == 3
    shutil.rmtree(project / ".venv")  # the environment is gone (and its stamp with it)
    _dev(project, "manage", "check")
    assert _syncs(project) == 4


def test_a_failed_sync_is_tried_again_by_the_next_command(tmp_path):
    project = _project(tmp_path)
    failing = project.parent / "bin" / "uv"
    failing.write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/uv-calls.txt"\n[ "$1" = --version ]\n')
    assert subprocess.run([str(project / "dev"), "manage", "check"], cwd=project, capture_output=True,  # noqa: S603
                          env={**os.environ, "PATH": f"{failing.parent}{os.pathsep}{os.environ['PATH']}"},
                          timeout=60).returncode != 0  # fmt: skip
    failing.write_text(FAKE_UV)
    _dev(project, "manage", "check")
    assert _syncs(project) == 2


def test_a_second_dev_up_sets_up_nothing_again_and_starts_without_warnings(tmp_path):
    served = devup.start(tmp_path)
    devup.stop(served)
    stamp = tmp_path / "data" / "static.collected"
    assert stamp.is_file()
    collected_at = stamp.stat().st_mtime_ns
    served = devup.start(tmp_path)
    try:
        printed = served.printed()
        assert "No migrations to apply." in printed
        assert "0 created, 0 updated, 0 deleted" in printed
        assert "An admin user exists (admin); nothing changed." in printed
        assert stamp.stat().st_mtime_ns == collected_at  # the static files were not collected again
        assert "errcatalog is starting on " + served.base_url in printed
        # The worker and beat start once the server answers; neither warns about the broker's URL.
        worker_log = tmp_path / "data" / "log" / "worker.log"
        deadline = time.monotonic() + 300
        while not (worker_log.exists() and " ready." in worker_log.read_text()):
            assert time.monotonic() < deadline, "the Celery worker did not start"
            time.sleep(0.5)
    finally:
        devup.stop(served)
    for log in ("worker.log", "beat.log"):
        assert "No hostname was supplied" not in (worker_log.parent / log).read_text(), log
    assert "No hostname was supplied" not in served.stderr() + served.printed()


# --- Stopping it, and a port that is taken --------------------------------------------------------------------------


STOPS = {
    "SIGTERM to ./dev only": (signal.SIGTERM, False),
    "SIGHUP to ./dev only": (signal.SIGHUP, False),
    "Ctrl+C: SIGINT to the group": (signal.SIGINT, True),
    "the terminal closed: SIGHUP to the group": (signal.SIGHUP, True),
}


@pytest.mark.parametrize("stop", STOPS)
def test_every_way_of_stopping_dev_up_stops_every_process_it_started(stop, tmp_path):
    number, to_group = STOPS[stop]
    served = devup.start_set_up(tmp_path)
    try:
        running = devup.wait_for_worker_and_beat(served)
        (os.killpg if to_group else os.kill)(served.process.pid, number)
        status = served.process.wait(timeout=90)
        # Nothing carrying this start's data folder is left (the worker's pool process included), nothing is left
        # in its process group, and nothing answers on its port.
        deadline = time.monotonic() + 5  # a process killed by the last sweep may take a moment to go
        while (left := devup.processes(served.data_dir)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == {}, f"{stop} left {left} running (the stack was {running})"
        try:
            os.killpg(served.process.pid, 0)
            raise AssertionError(f"{stop} left a process in ./dev's process group")
        except ProcessLookupError:
            pass
        try:
            socket.create_connection(("127.0.0.1", int(served.base_url.rsplit(":", 1)[1])), timeout=2).close()
            raise AssertionError(f"something still answers on {served.base_url} after {stop}")
        except ConnectionRefusedError:
            pass
        assert status == 128 + number  # as a shell reports a command that a signal stopped
    finally:
        devup.stop(served)


def test_dev_up_on_a_port_that_is_taken_says_so_in_one_line_before_setting_anything_up(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        served = devup.launch(tmp_path, port=port)
        status = served.process.wait(timeout=60)
    assert status != 0
    assert served.printed() == ""
    assert served.stderr() == (
        f"errcatalog: port {port} on 127.0.0.1 is in use; stop what uses it or set PORT={port + 1}\n"
    )
    # No database, so no admin: nothing was set up.
    assert not (served.data_dir / "errcatalog.sqlite3").exists()

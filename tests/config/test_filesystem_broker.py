"""The embedded Celery broker (config/filesystem_broker.py): a message is never read half-written, and a message
file nobody can read is set aside instead of ending the worker, alone and in a real ``./dev up`` under load.

The first tests use the transport as Celery does, through kombu's connection for a ``filesystem://`` URL on a folder of
their own; the last runs ``./dev up`` (tests/support/devup.py) and corrupts its broker's folder while MCP calls flow
through the SDK's client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
import uuid
from pathlib import Path

from kombu import Connection

import config.celery  # noqa: F401 (what makes "filesystem://" this project's transport, in every process)
from config.filesystem_broker import UNREADABLE_GRACE_SECONDS
from tests.support import devup


def _connection(folder: Path) -> Connection:
    # kombu keeps a process-wide record of the queues declared on this transport: each test names its own queue.
    queue = folder / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    options = {
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "control_folder": str(folder / "control"),
        "quarantine_folder": str(folder / "quarantine"),
    }
    return Connection("filesystem://localhost/", transport_options=options)


def test_a_reader_never_sees_a_message_half_written(tmp_path):
    body = "x" * 200_000  # large enough that writing one takes a while
    queue_folder = tmp_path / "queue"
    written = 300
    seen, unreadable = 0, []
    done = threading.Event()

    def read_every_message_file() -> None:
        # As a consumer meets them: every file with a message's name, read as soon as it is listed.
        nonlocal seen
        while not done.is_set():
            for path in queue_folder.glob("*.q.msg"):
                try:
                    raw = path.read_bytes()
                except FileNotFoundError:
                    continue
                seen += 1
                try:
                    json.loads(raw)
                except ValueError:
                    unreadable.append(len(raw))

    with _connection(tmp_path) as connection:
        queue = connection.SimpleQueue("q")
        reader = threading.Thread(target=read_every_message_file)
        reader.start()
        try:
            for _ in range(written):
                queue.put(body)
        finally:
            done.set()
            reader.join()
        assert len(os.listdir(queue_folder)) == written  # each message whole under its final name, nothing else
        queue.close()
    assert seen > 0
    assert unreadable == [], f"{len(unreadable)} of {seen} message files read half-written (sizes {unreadable[:5]})"


def test_an_unreadable_message_file_is_left_a_moment_then_set_aside_and_the_next_message_delivered(tmp_path, caplog):
    queue_folder, quarantine = tmp_path / "queue", tmp_path / "quarantine"
    with _connection(tmp_path) as connection:
        queue = connection.SimpleQueue("r")
        queue.put({"n": 1})
        (whole,) = queue_folder.iterdir()
        half = whole.read_bytes()[: whole.stat().st_size // 2]
        # Older than the message (their names sort first): created and not yet written, and written in part.
        empty = queue_folder / f"0_{uuid.uuid4()}.r.msg"
        empty.write_bytes(b"")
        truncated = queue_folder / f"00_{uuid.uuid4()}.r.msg"
        truncated.write_bytes(half)

        # Just written: perhaps still being written, so left where they are; the message behind them comes.
        assert queue.get(block=False).payload == {"n": 1}
        assert empty.exists() and truncated.exists() and not quarantine.exists()

        # Unchanged for longer than a write takes: moved aside, logged, and the queue goes on.
        past = time.time() - UNREADABLE_GRACE_SECONDS - 1
        for path in (empty, truncated):
            os.utime(path, (past, past))
        queue.put({"n": 2})
        with caplog.at_level(logging.WARNING, logger="config.filesystem_broker"):
            assert queue.get(block=False).payload == {"n": 2}
        assert sorted(os.listdir(quarantine)) == sorted([empty.name, truncated.name])
        assert (quarantine / truncated.name).read_bytes() == half
        assert os.listdir(queue_folder) == []
        for path in (empty, truncated):
            assert str(quarantine / path.name) in caplog.text
        queue.close()


def test_corrupt_message_files_under_load_leave_the_worker_running_and_every_call_counted(tmp_path):
    """While MCP calls flow through ``./dev up``: a real task message caught in the broker's folder is truncated
    in place, and two message files are written as kombu's own writer leaves them when a reader comes too early (one
    empty, one holding the first half of a real message).

    What it asserts: the worker that was running before is the one running after (no restart, no "Unrecoverable
    error"); the two files planted are in the quarantine folder, unchanged, and the worker's log names each; and
    every call answered is counted. Every call, and not only those whose message was intact, because on this broker
    a task message carries no events, only "drain the spool": each call's event waits in a batch file of the spool
    folder (errcatalog.outcomes.spool), and beat sends the drain every second, so a destroyed message loses one
    reminder. The truncated real message is either set aside too or was read whole just before the truncation;
    either way nothing else may be in the quarantine folder.
    """
    served = devup.start_set_up(tmp_path, env={"ERRCATALOG_MCP_RATE_LIMIT": "0"})
    try:
        before = devup.wait_for_worker_and_beat(served)
        queue_folder = served.data_dir / "celery" / "queue"
        planted: dict[str, bytes] = {}
        truncated: list[str] = []

        def corrupt() -> None:
            deadline = time.monotonic() + 30
            while not truncated:
                assert time.monotonic() < deadline, "no task message was seen in the broker's folder"
                for path in sorted(queue_folder.glob("*.celery.msg")):
                    try:
                        raw = path.read_bytes()
                        os.truncate(path, len(raw) // 2)
                    except FileNotFoundError:
                        continue  # the worker took it first
                    truncated.append(path.name)
                    planted[f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.celery.msg"] = b""
                    planted[f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.celery.msg"] = raw[: len(raw) // 2]
                    break
                time.sleep(0.005)
            for name, content in planted.items():
                (queue_folder / name).write_bytes(content)

        answered = asyncio.run(devup.call_under_load(served, calls=600, concurrency=4, disturb_at=100, disturb=corrupt))

        quarantine = served.data_dir / "celery" / "quarantine"
        deadline = time.monotonic() + 60
        while not (quarantine.is_dir() and set(planted) <= set(os.listdir(quarantine))):
            assert time.monotonic() < deadline, f"not set aside:\n{served.log_tail('worker.log')}"
            time.sleep(0.2)
        for name, content in planted.items():
            assert (quarantine / name).read_bytes() == content
        assert set(os.listdir(quarantine)) - set(planted) <= set(truncated)

        assert devup.wait_for_outcomes(served, "explain_error", answered) == answered == 600
        assert devup.stack(served) == before  # the same worker, beat and web server
        assert "exited" not in served.stderr()
        worker_log = (served.data_dir / "log" / "worker.log").read_text(errors="replace")
        assert "Unrecoverable error" not in worker_log
        for name in planted:
            assert name in worker_log
    finally:
        devup.stop(served)

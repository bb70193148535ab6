"""The outcome buffer of the embedded setup (no Redis, Celery's filesystem broker): batch files in a folder.

- ``spool_write(folder: Path, payloads: list[dict]) -> None``: store one batch of wire events as a file, durably
  (written aside, flushed to disk, then renamed into place: a reader never sees half a batch);
  ``spool_write_encoded(folder, encoded: list[bytes])`` the same for events already encoded as JSON.
- ``spool_drain(folder: Path, store: Callable[[list[dict]], int], *, deadline: float) -> int``: hand the waiting
  batches to ``store`` oldest first, deleting each file only after ``store`` returned; returns what it stored.
- ``spool_size(folder: Path) -> int``: batch files waiting (tests, people).
- ``spool_backlog(folder: Path) -> tuple[int, float | None]``: events waiting and the oldest batch's age (monitoring).

Why a folder and not the events inside Celery tasks: kombu's filesystem transport moves a message file out of the
queue and deletes it when a worker *reads* it (``Channel._get``), before the task runs; ``acks_late`` changes
nothing there, and a message of a killed worker is never given back. A batch file outlives any worker: the next
drain stores it again, which changes nothing, since the event ID is the primary key (at-least-once delivery,
idempotent apply, like the Redis stream).

One drainer at a time, under an exclusive ``flock`` on a lock file in the folder, so episodes are correlated in
the order batches were written. The kernel releases the lock of a killed process, so a dead drainer blocks no
one and no timeout is needed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

logger = logging.getLogger(__name__)

_SUFFIX = ".batch.json"
_PENDING_PREFIX = ".pending-"  # a batch being written: never read, removed by a drain once its writer is gone
_LOCK_NAME = ".drain.lock"
_REJECTED = "rejected"  # files that are not a batch: kept aside for a person, never retried
# A writer takes milliseconds; a pending file this old belongs to a process that died while writing it.
_ABANDONED_PENDING_SECONDS = 3600.0

_sequence = itertools.count()


def spool_write(folder: Path, payloads: list[dict[str, Any]]) -> None:
    """Store one batch durably; raises ``OSError`` when it cannot (the caller keeps the events and retries)."""
    spool_write_encoded(folder, [orjson.dumps(payload) for payload in payloads])


def spool_write_encoded(folder: Path, encoded: list[bytes]) -> None:
    """``spool_write`` of payloads already encoded as JSON, one object each (the recorder's)."""
    # Names sort in the order batches were written: nanoseconds first, then this process's own sequence; the
    # number of events last, so a backlog is counted from the names alone (``spool_backlog``).
    name = f"{time.time_ns():020d}-{os.getpid()}-{next(_sequence):010d}-{len(encoded)}{_SUFFIX}"
    pending = folder / f"{_PENDING_PREFIX}{name}"
    data = memoryview(b"[" + b",".join(encoded) + b"]")
    try:
        fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileNotFoundError:  # the first batch, or the folder was removed: made here, not looked for every time
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            while data:
                data = data[os.write(fd, data) :]
            # A killed process loses nothing the kernel already has; fsync also covers a crash of the machine,
            # so a batch that was answered for is never half a file.
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(pending, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            pending.unlink()
        raise


def spool_size(folder: Path) -> int:
    """Batch files waiting in ``folder``."""
    return len(_waiting(folder))


def spool_backlog(folder: Path) -> tuple[int, float | None]:
    """Events waiting in ``folder`` and the age in seconds of the oldest batch (None when none waits).

    Read from the file names (a listing, whatever the backlog); a batch written before names carried their count is
    read to count it.
    """
    waiting = _waiting(folder)
    events = 0
    for path in waiting:
        parts = path.name.removesuffix(_SUFFIX).split("-")
        if len(parts) == 4 and parts[3].isdigit():
            events += int(parts[3])
        else:
            with contextlib.suppress(OSError, ValueError):
                events += len(json.loads(path.read_bytes()))
    if not waiting:
        return events, None
    # Names start with the time the batch was written, in nanoseconds.
    written_ns = int(waiting[0].name.split("-", 1)[0])
    return events, max(0.0, (time.time_ns() - written_ns) / 1e9)


def spool_drain(folder: Path, store: Callable[[list[dict[str, Any]]], int], *, deadline: float) -> int:
    """Store the waiting batches oldest first, each file deleted only after ``store`` returned (committed).

    Returns the sum of what ``store`` returned. Returns at once when another drainer holds the lock: that one
    drains until the folder is empty, and looks again after it let go, so a batch written meanwhile is not left
    behind. Stops after the batch that passed ``deadline`` (``time.monotonic()``); the rest waits for the next
    drain. An exception from ``store`` leaves the batch in place and propagates.
    """
    stored = 0
    while True:
        with _drain_lock(folder) as locked:
            if not locked:
                return stored
            _remove_abandoned_pending(folder)
            while batches := _waiting(folder):
                for path in batches:
                    stored += _store_file(path, store)
                    if time.monotonic() > deadline:
                        return stored
        # A batch may have come after the last look and its nudge found the lock taken: look once more.
        if not _waiting(folder):
            return stored


def _waiting(folder: Path) -> list[Path]:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return [folder / name for name in sorted(names) if name.endswith(_SUFFIX) and not name.startswith(".")]


def _store_file(path: Path, store: Callable[[list[dict[str, Any]]], int]) -> int:
    try:
        payloads = json.loads(path.read_bytes())
    except FileNotFoundError:  # stored and deleted by a drainer that had the lock before us
        return 0
    except ValueError:
        payloads = None
    if not isinstance(payloads, list):
        _reject(path)
        return 0
    stored = store(payloads)
    # After the commit: a kill between the two leaves the file, and storing it again adds nothing.
    path.unlink(missing_ok=True)
    return stored


def _reject(path: Path) -> None:
    rejected = path.parent / _REJECTED
    rejected.mkdir(exist_ok=True)
    os.replace(path, rejected / path.name)
    # The file name only: the content is reporters' data.
    logger.warning("outcomes: spooled batch %s is not a batch of events; moved to %s/", path.name, _REJECTED)


def _remove_abandoned_pending(folder: Path) -> None:
    cutoff = time.time() - _ABANDONED_PENDING_SECONDS
    for name in os.listdir(folder):
        if name.startswith(_PENDING_PREFIX):
            with contextlib.suppress(OSError):
                if (folder / name).stat().st_mtime < cutoff:
                    (folder / name).unlink()


@contextlib.contextmanager
def _drain_lock(folder: Path) -> Iterator[bool]:
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            yield False
            return
        yield True  # closing the descriptor below releases the lock (and the kernel does it for a killed process)
    finally:
        os.close(fd)

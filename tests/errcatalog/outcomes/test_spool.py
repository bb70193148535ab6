"""The spool folder (the outcome buffer on Celery's filesystem broker) with real files, locks and processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from errcatalog.outcomes.spool import spool_drain, spool_size, spool_write
from tests.support.processes import REPO_ROOT
from tests.support.waiting import wait_until


def forever() -> float:
    return time.monotonic() + 3600


def batch(*numbers: int) -> list[dict]:
    return [{"n": n} for n in numbers]


def test_batches_are_drained_oldest_first_and_deleted_after_they_were_stored(tmp_path):
    for numbers in ((1, 2), (3,), (4, 5, 6)):
        spool_write(tmp_path, batch(*numbers))
    seen: list[list[dict]] = []

    def store(payloads: list[dict]) -> int:
        assert spool_size(tmp_path) == 3 - len(seen)  # this batch's file is still there while it is stored
        seen.append(payloads)
        return len(payloads)

    assert spool_drain(tmp_path, store, deadline=forever()) == 6
    assert seen == [batch(1, 2), batch(3), batch(4, 5, 6)]
    assert spool_size(tmp_path) == 0


def test_the_folder_is_made_when_missing_also_after_it_was_removed(tmp_path):
    folder = tmp_path / "outcomes" / "spool"
    spool_write(folder, batch(1))
    assert spool_drain(folder, len, deadline=forever()) == 1
    shutil.rmtree(folder)  # an operator cleaned up: the next batch makes it again
    spool_write(folder, batch(2, 3))
    assert spool_size(folder) == 1 and not [name for name in os.listdir(folder) if name.startswith(".pending")]


def test_a_batch_whose_store_failed_stays_for_the_next_drain(tmp_path):
    spool_write(tmp_path, batch(1))

    def failing(payloads: list[dict]) -> int:
        raise ConnectionError("database went away")

    with pytest.raises(ConnectionError):
        spool_drain(tmp_path, failing, deadline=forever())
    assert spool_size(tmp_path) == 1
    assert spool_drain(tmp_path, len, deadline=forever()) == 1
    assert spool_size(tmp_path) == 0


# A drainer in another process that announces it is storing, then never finishes.
STUCK_DRAINER = """
import sys, time
from pathlib import Path
from errcatalog.outcomes.spool import spool_drain

def stuck(payloads):
    Path(sys.argv[2]).touch()
    time.sleep(3600)

spool_drain(Path(sys.argv[1]), stuck, deadline=time.monotonic() + 3600)
"""


def test_a_drainer_killed_while_storing_leaves_its_batch_and_no_lock_behind(tmp_path):
    spool = tmp_path / "spool"
    spool_write(spool, batch(1, 2))
    entered = tmp_path / "entered"
    child = subprocess.Popen([sys.executable, "-c", STUCK_DRAINER, str(spool), str(entered)], cwd=REPO_ROOT)  # noqa: S603
    try:
        wait_until(entered.exists, what="the other drainer to be storing")
        assert spool_drain(spool, len, deadline=forever()) == 0  # the living drainer holds the lock
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)

    assert spool_drain(spool, len, deadline=forever()) == 2  # the kernel released the dead one's lock
    assert spool_size(spool) == 0


def test_a_file_that_is_not_a_batch_is_moved_aside_not_retried(tmp_path, caplog):
    (tmp_path / "00000000000000000001-1-0000000000.batch.json").write_text("{not json")
    spool_write(tmp_path, batch(1))

    assert spool_drain(tmp_path, len, deadline=forever()) == 1
    assert spool_size(tmp_path) == 0
    assert [path.name for path in (tmp_path / "rejected").iterdir()] == ["00000000000000000001-1-0000000000.batch.json"]
    assert "not a batch of events" in caplog.text
    assert "not json" not in caplog.text


def test_a_drain_stops_after_its_deadline_and_leaves_the_rest(tmp_path):
    for n in range(3):
        spool_write(tmp_path, batch(n))

    assert spool_drain(tmp_path, len, deadline=time.monotonic() - 1) == 1
    assert spool_size(tmp_path) == 2


def test_a_batch_is_written_whole_and_private(tmp_path):
    spool_write(tmp_path / "new", batch(1, 2))

    [path] = (tmp_path / "new").glob("*.batch.json")
    assert json.loads(path.read_bytes()) == batch(1, 2)
    assert path.stat().st_mode & 0o777 == 0o600
    assert not [name for name in os.listdir(tmp_path / "new") if name.startswith(".pending-")]

"""Threads started on first use: one at a time, again after the target returned, afresh in a forked child."""

from __future__ import annotations

import os
import threading

import pytest

from errcatalog.background import OnDemandThread


class _Target:
    """A target that counts its runs and returns when told to."""

    def __init__(self) -> None:
        self.runs = 0
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self) -> None:
        self.runs += 1
        self.started.set()
        self.release.wait(10)


def test_many_callers_at_once_start_one_thread():
    target = _Target()
    thread = OnDemandThread("test-on-demand", target)
    callers = [threading.Thread(target=thread.ensure) for _ in range(16)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert target.started.wait(5)
    assert thread.running
    assert [t.name for t in threading.enumerate()].count("test-on-demand") == 1
    target.release.set()
    thread.join(5)
    assert not thread.running
    assert target.runs == 1


def test_a_thread_whose_target_returned_is_started_again_by_the_next_caller():
    target = _Target()
    thread = OnDemandThread("test-on-demand-again", target)
    target.release.set()  # each run returns at once
    thread.ensure()
    thread.join(5)
    assert not thread.running
    thread.ensure()
    thread.join(5)
    assert target.runs == 2


def test_a_forked_child_starts_its_own_thread():
    target = _Target()
    thread = OnDemandThread("test-on-demand-fork", target)
    thread.ensure()
    assert target.started.wait(5)
    with thread._lock:  # held at the fork: the child must not wait for a lock no thread of its own will release
        pid = os.fork()
        if pid == 0:  # the child reports through its exit status
            try:
                ok = not thread.running
                target.started.clear()
                thread.ensure()
                ok = ok and thread.running and target.started.wait(5) and target.runs == 2
            except BaseException:
                ok = False
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert target.runs == 1  # the parent's thread is the parent's alone
    target.release.set()
    thread.join(5)


def test_a_thread_that_could_not_start_is_tried_again_by_the_next_caller(monkeypatch):
    target = _Target()
    target.release.set()
    thread = OnDemandThread("test-on-demand-refused", target)

    def refused(self):
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as patched:
        patched.setattr(threading.Thread, "start", refused)
        with pytest.raises(RuntimeError):
            thread.ensure()
    assert not thread.running
    thread.ensure()
    assert target.started.wait(5)
    thread.join(5)
    assert target.runs == 1

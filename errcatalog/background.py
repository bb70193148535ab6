"""A daemon thread that a process starts the first time it needs it: the outcome recorder's flusher, the catalog
watcher, the Prometheus fold.

``OnDemandThread.ensure()`` starts the thread unless it runs; once it runs, a caller on the request path pays one
attribute read. When the target returns (the watcher does when polling is turned off, the flusher when it is
stopped), the next ``ensure()`` starts it again. A forked child (a Celery pool process, a uvicorn worker) has none
of its parent's threads and maybe a lock the parent held at the fork: it forgets both, and its next ``ensure()``
starts a thread of its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


class OnDemandThread:
    """One daemon thread running ``target``, started by ``ensure``; one object per kind of thread and process."""

    def __init__(self, name: str, target: Callable[[], object]) -> None:
        self.name = name
        self._target = target
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        os.register_at_fork(after_in_child=self._forget)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def ensure(self) -> None:
        """Start the thread unless it runs. Raises what ``Thread.start`` raises (no thread to be had: the next
        call tries again)."""
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            try:
                self._thread.start()
            except BaseException:
                self._thread = None
                raise

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the thread to end (after the caller asked its target to return)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        try:
            self._target()
        finally:
            with self._lock:
                self._thread = None

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._thread = None

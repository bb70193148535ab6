"""Sync tools run in worker threads: ``run_in_thread`` hands a call to one and awaits its result.

A tool that reads the database must not block the event loop (Django's ORM is synchronous), so it runs in a thread.
anyio's ``to_thread.run_sync``, which the SDK's ``MCPServer`` uses, costs the loop more per call than the call needs (a
capacity limiter, a shielded cancel scope, a sweep of idle workers); so does asyncio's ``run_in_executor`` (a second
future chained onto the executor's), and ``ThreadPoolExecutor`` starts a new thread whenever a call comes before the
last one's thread counted itself idle, so a busy endpoint soon cycles through all of them. This pool does what a tool
call needs and no more: a queue, an idle count, and the result handed back to the loop with one
``call_soon_threadsafe``.

- ``await run_in_thread(function, *args)``: ``function(*args)`` in a worker thread, with a copy of the caller's
  context (Sentry's scope); what it raises is raised to the caller.
- An idle thread takes the call, else a new one starts, up to ``MAX_THREADS`` (anyio's default limit, which the
  tools had before); beyond that, calls wait in line. Threads are daemons and stay for the next calls.
- Cancelled (the client went away), the caller stops waiting at once; the tool runs to its end in its thread (a
  thread cannot be stopped from outside) and its result is dropped.
- A forked child (a Celery prefork worker) makes a pool of its own on first use: the parent's threads are not there.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

MAX_THREADS = 40

# A call for a worker: the loop and future to answer on, and what to run in which context.
_Job = tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...]]


class _Pool:
    def __init__(self, max_threads: int) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._max_threads = max_threads
        self._threads = 0
        self._idle = 0  # threads between two jobs that no call has claimed yet

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # that thread takes this job (or an earlier one, whose own claim is this one's)
                start = False
            else:
                start = self._threads < self._max_threads
                self._threads += start
            number = self._threads
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._work, name=f"errcatalog-tool-{number}", daemon=True).start()

    def _work(self) -> None:
        while True:
            loop, waiter, context, function, args = self._jobs.get()
            try:
                outcome: tuple[bool, Any] = (True, context.run(function, *args))
            except BaseException as exc:  # handed to the caller, whatever it is
                outcome = (False, exc)
            del context, function, args
            # Idle from here: a call that comes as soon as this one is answered finds this thread, not a new one.
            with self._lock:
                self._idle += 1
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (shutdown): nobody waits any more
                loop.call_soon_threadsafe(_settle, waiter, outcome)
            del loop, waiter, outcome


def _settle(waiter: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if waiter.cancelled():
        return
    succeeded, value = outcome
    if succeeded:
        waiter.set_result(value)
    else:
        waiter.set_exception(value)


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _the_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _Pool(MAX_THREADS)
        return _pool


async def run_in_thread[T](function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in a worker thread; its result, or its exception raised here."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[T] = loop.create_future()
    (_pool or _the_pool()).submit((loop, waiter, contextvars.copy_context(), function, args))
    return await waiter


def _after_fork_in_child() -> None:
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)

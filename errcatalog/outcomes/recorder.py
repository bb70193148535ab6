"""Request-path side of outcome recording: a bounded in-process buffer and a background flusher.

Interface (fixed):
- ``record(event: OutcomeEvent) -> None``: called once per tool call on the request path. O(1), never raises,
  never blocks on I/O. Encodes the event and appends it to a bounded in-process buffer; a background flusher
  sends batches to the Redis streams (``REDIS_URL`` set; each event into its partition's stream,
  ``partitions``); without Redis, on Celery's filesystem broker, to batch files in the spool folder (``spool``;
  a ``drain_outcomes`` task asks a worker to store them now, at most once per ``DRAIN_REQUEST_SECONDS``); on
  another broker, as ``errcatalog.ingest_outcomes`` Celery tasks.
- ``submit(events: Sequence[OutcomeEvent]) -> None``: durable push now, for the REST batch endpoint. Raises
  ``BufferUnavailable`` when the buffer cannot take them (the API answers 503 then), and when they would fill more
  than half of a Redis stream (``REPORTED_SHARE_OF_STREAM``).
- ``prepare() -> None``: at a server's start, the slow first part of sending (Celery's imports) done ahead.
- ``flush(timeout: float = 5.0) -> bool``: push everything held now (shutdown, tests); True when all went.
- ``stats() -> RecorderStats``: counters for people and tests (recorded, sent, dropped, held, paused).
- ``reset()``: stop the flusher and forget everything held and counted (tests, and a forked child).

Why this shape: a tool call must not wait for Redis, and must keep serving while Redis is down. So ``record`` only
encodes the event and appends it to a
bounded ``deque`` (no lock, no I/O); a daemon thread wakes every ``FLUSH_INTERVAL_MS`` (sooner when half of
``MAX_UNSENT`` or ``BATCH_SIZE`` events wait) and sends them in one pipelined round trip. What a SIGKILL of the
process loses is what it holds unsent: at most ``MAX_UNSENT`` events while the buffer is reachable (the other half
covers calls answered during a send). Events leave the process buffer only when the send succeeded; while it
fails they stay, up to ``LOCAL_BUFFER_MAX``, the oldest dropped and counted beyond that.

Why the request path encodes: the flusher shares the GIL with the event loop, and a thread waiting for it gets it
only when the holder lets go (or after ``sys.getswitchinterval()``). Encoding a whole batch in the flusher held it
for long stretches, and every request in flight waited that long: under load, most of the event loop's slow steps
were spent waiting for the flusher. Spread over the calls, the same work costs each little, and the flusher holds the
GIL only for the moments between its system calls.

Settings: ``record`` must not read ``django.conf.settings`` itself (one attribute read through Django's lazy proxy
costs more than the rest of ``record``), so the recorder keeps a copy of the few values it needs. The
copy is refreshed by every flush (so a changed value takes effect within one flush interval), and dropped at once
when Django reports a change of ``OUTCOMES`` or ``REDIS_URL`` (``override_settings`` and pytest-django's
``settings`` fixture send ``setting_changed``), so tests see their overrides on the next call.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import redis
from celery import current_app
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from errcatalog.background import OnDemandThread
from errcatalog.outcomes import partitions, prometheus, spool
from errcatalog.outcomes.episodes import event_key
from errcatalog.outcomes.events import OutcomeEvent

logger = logging.getLogger("errcatalog.outcomes.recorder")

# The recorder sends tasks by name through the Celery app: ``errcatalog.outcomes.tasks`` (the worker side, above
# this module) defines them under these stable names.
INGEST_TASK = "errcatalog.ingest_outcomes"
DRAIN_TASK = "errcatalog.drain_outcomes"

# Redis answers a local pipeline in well under a millisecond; a second means it is gone, and the flusher (or a
# REST request in ``submit``) must not hang on it longer than that.
REDIS_TIMEOUT_SECONDS = 1.0
# While the buffer is unreachable the flusher retries this often (a failed attempt costs at most the timeout).
PAUSED_RETRY_SECONDS = 1.0
# Spooled batches ask a worker for a drain at most this often: one drain stores every file waiting, and a Celery
# message per batch cost a busy web process about 3% of its time per call. Beat asks once a second too.
DRAIN_REQUEST_SECONDS = 1.0


# KEYS: one partition's stream; ARGV: its length bound, then the events' payloads in order. One command per stream
# and batch: an XADD per event packed by redis-py cost the flusher several microseconds of the web process per event.
_ADD_ALL = """
for i = 2, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[i])
end
return #ARGV - 1
"""

# Reported events (``submit``) may fill at most this share of a partition's stream, and never trim it. ``_ADD_ALL``
# trims the oldest entries once a stream passes its bound, unread ones included, so reports that could fill a stream
# would push this server's own waiting calls out of it while no worker drains it: a reporter could suppress them.
# Held to half, reports leave the other half to this server's calls, which are trimmed only once they alone pass it.
# A partition's share must hold a full REST batch (1,000 events), or such a batch is refused until it is sent smaller.
REPORTED_SHARE_OF_STREAM = 0.5

# KEYS: one partition's stream; ARGV: the most entries it may hold afterwards, then the events' payloads in order.
# Adds all of them without trimming, or none (returns -1) when they would take the stream past that number.
_ADD_WITHIN = """
if redis.call('XLEN', KEYS[1]) + #ARGV - 1 > tonumber(ARGV[1]) then
  return -1
end
for i = 2, #ARGV do
  redis.call('XADD', KEYS[1], '*', 'e', ARGV[i])
end
return #ARGV - 1
"""


# An event as the recorder holds it: with its wire form, made on the request path.
_Held = tuple[OutcomeEvent, bytes]


class BufferUnavailable(RuntimeError):
    """The outcome buffer (Redis, or the Celery broker) cannot take events right now."""


class StreamShareFull(RuntimeError):
    """Reported events would take a stream past their share of it (``REPORTED_SHARE_OF_STREAM``)."""


@dataclass(frozen=True, slots=True)
class RecorderStats:
    """This process's counters since it started (or since ``reset``)."""

    recorded: int  # events accepted by ``record``
    sent: int  # events that reached the buffer (Redis stream or Celery broker), ``submit`` included
    dropped: int  # events lost: buffer overflow while the buffer was unreachable, or an event that would not encode
    held: int  # events waiting in this process now
    paused: bool  # the last attempt to send failed


@dataclass(frozen=True, slots=True)
class _Destination:
    """Where a flush sends, read from settings at that moment."""

    redis_url: str
    spool_dir: str
    stream_key: str
    stream_maxlen: int
    batch_size: int
    partitions: int

    @property
    def label(self) -> str:
        """Host and port (or socket path) of the Redis URL: never its password."""
        parts = urlsplit(self.redis_url)
        if parts.scheme == "unix":
            return parts.path
        host = parts.hostname or "localhost"
        return f"[{host}]:{parts.port or 6379}" if ":" in host else f"{host}:{parts.port or 6379}"


def _destination() -> _Destination:
    outcomes = settings.OUTCOMES
    return _Destination(
        redis_url=settings.REDIS_URL,
        spool_dir=outcomes["SPOOL_DIR"],
        stream_key=outcomes["STREAM_KEY"],
        stream_maxlen=outcomes["STREAM_MAXLEN"],
        batch_size=outcomes["BATCH_SIZE"],
        partitions=_partition_count(outcomes["PARTITIONS"]),
    )


def _partition_count(count: int) -> int:
    problem = partitions.check_count(count)
    if problem:
        raise ImproperlyConfigured(f"OUTCOMES['PARTITIONS']: {problem}.")
    return count


class _Recorder:
    """The process-wide recorder behind the module functions. One per process; a forked child gets a clean one.

    Threads: ``record`` runs on the request path (the event loop) and takes no lock. ``collections.deque`` appends
    and pops are atomic, and a deque with ``maxlen`` drops its oldest item itself when full. The sender (the
    flusher thread, or ``flush``) holds ``_send_lock``; its batch in flight stays counted as held (``_retry``) until
    Redis or the broker took it. Each counter has one writer: the request path, the sender, or ``submit`` (which
    takes ``_submit_lock``), so no increment is lost between threads.
    """

    def __init__(self) -> None:
        self._flusher = OnDemandThread("outcome-recorder", self._run)
        self._init_state()

    def _init_state(self) -> None:
        self._send_lock = threading.Lock()  # one sender at a time, so batches leave in the order they came
        self._submit_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        # Each event with its wire form (``OutcomeEvent.to_json``), made by ``record``.
        self._buffer: collections.deque[_Held] = collections.deque(maxlen=1)
        self._retry: list[_Held] = []  # the sender's batch that did not go yet: oldest events held
        # Copies of settings (see the module docstring); ``_enabled`` is None until they are read.
        self._enabled: bool | None = None
        self._limit = 0  # LOCAL_BUFFER_MAX
        self._batch_size = 1 << 30  # BATCH_SIZE
        self._wake_at = 1 << 30  # the flusher is woken when this many events wait: BATCH_SIZE or MAX_UNSENT / 2
        self._interval = 0.1  # FLUSH_INTERVAL_MS, in seconds
        self._redis: redis.Redis | None = None
        self._add_all: Any = None  # the ``_ADD_ALL`` script on ``_redis``
        self._add_within: Any = None  # the ``_ADD_WITHIN`` script on ``_redis``
        self._redis_url = ""
        # Request path: accepted, pushed out of the full buffer, failed inside ``record`` (unencodable included).
        self.recorded = self.dropped_full = self.dropped_failed = 0
        # Sender: sent, dropped while paused (beyond the bound). ``submit``: sent.
        self.sent = self.dropped_sending = self.submitted = 0
        self._paused_since_dropped: int | None = None  # ``dropped`` when the pause began; None while healthy
        # Spool batches written since the last ``drain_outcomes`` was sent, and when that was (``time.monotonic``).
        self._drain_owed = False
        self._drain_requested_at = float("-inf")

    @property
    def dropped(self) -> int:
        return self.dropped_full + self.dropped_failed + self.dropped_sending

    # --- Request path ---------------------------------------------------------------------------------------

    def record(self, event: OutcomeEvent) -> None:
        enabled = self._enabled
        if not enabled and (enabled is not None or not self.load_settings()):
            return
        self.recorded += 1
        try:
            held = (event, event.to_json())
        except Exception:  # not an OutcomeEvent, or a value JSON cannot carry: it can never be recorded
            self.dropped_failed += 1
            return
        buffer = self._buffer
        if len(buffer) == buffer.maxlen:
            self.dropped_full += 1  # the append pushes the oldest out
        buffer.append(held)
        if len(buffer) == self._wake_at:
            self._wake.set()  # a full batch, or half of what a SIGKILL may lose, waits: send it now
        self._flusher.ensure()

    def load_settings(self) -> bool:
        """Copy the settings ``record`` and the flusher use; returns ``ENABLED``."""
        outcomes = settings.OUTCOMES
        enabled = bool(outcomes["ENABLED"])
        limit, batch_size = int(outcomes["LOCAL_BUFFER_MAX"]), int(outcomes["BATCH_SIZE"])
        self._interval = outcomes["FLUSH_INTERVAL_MS"] / 1000
        self._batch_size = batch_size
        # Capped by the buffer's own bound too, or a length it can never reach would never wake the flusher.
        self._wake_at = max(1, min(batch_size, int(outcomes["MAX_UNSENT"]) // 2, limit))
        if limit != self._limit:
            # A new bound (first use, or settings changed: rare). A smaller one keeps the newest events.
            old = self._buffer
            self._buffer = collections.deque(old, maxlen=limit)
            self.dropped_full += len(old) - len(self._buffer)
            self._limit = limit
        self._enabled = enabled
        return enabled

    def prepare(self) -> None:
        """Ask for a drain now when batches go to the spool: the first request imports Celery's sending side (a long
        hold of the GIL, which would otherwise stall the first calls a process serves), and a worker stores at
        once what a previous process left in the folder."""
        if not self.load_settings():
            return
        destination = _destination()
        if destination.spool_dir and not destination.redis_url:
            with self._send_lock:
                self._drain_owed = True
                self._request_drain(now=True)

    def settings_changed(self) -> None:
        self._enabled = None
        if self._flusher.running:
            self._wake.set()  # the flusher picks up a new destination or interval now

    # --- Sender: the flusher thread, or ``flush`` --------------------------------------------------------------

    def _run(self) -> None:
        stop = self._stop
        while not stop.is_set():
            wait = self._interval
            if self._drain_owed:  # woken in time to ask for the drain of what was spooled meanwhile
                wait = min(wait, max(0.0, self._drain_requested_at + DRAIN_REQUEST_SECONDS - time.monotonic()))
            self._wake.wait(wait)
            self._wake.clear()
            if stop.is_set():
                return
            try:
                delivered = self.send_held(deadline=None, everything=False)
                self._request_drain(now=False)
            except Exception:  # the flusher must outlive anything; the cause is logged, the events stay held
                logger.exception("Outcome recorder: unexpected failure while sending")
                delivered = False
            counters = self.stats()
            prometheus.recorder_mirror.copy(
                recorded=counters.recorded, sent=counters.sent, dropped=counters.dropped, held=counters.held
            )
            if not delivered:
                stop.wait(PAUSED_RETRY_SECONDS)

    def send_held(self, *, deadline: float | None, everything: bool = True) -> bool:
        """Send what is held, batch by batch, oldest first; False on a failure, else True.

        ``everything``: until nothing is left (``flush``). Otherwise (the flusher) only what was held when the
        send began: calls answered meanwhile wait for the next round, so that under steady load the flusher sends
        a few large batches, not a batch (a file and a Celery message, or a Redis round trip) per handful of
        calls that arrived while the previous one was on its way.
        """
        with self._send_lock:
            self.load_settings()
            destination = _destination()
            budget = None if everything else len(self._buffer)
            while True:
                if not self._retry:
                    count = destination.batch_size if budget is None else min(destination.batch_size, budget)
                    self._retry = self._take(count)
                    if not self._retry:
                        self._resumed(destination)
                        return True
                    if budget is not None:
                        budget -= len(self._retry)
                try:
                    self.sent += self._send(destination, self._retry)
                except Exception as exc:
                    self._trim_held()
                    self._failed(destination, exc)
                    return False
                self._retry = []
                if deadline is not None and time.monotonic() > deadline:
                    return not self._buffer

    def _request_drain(self, *, now: bool) -> None:
        """Send ``drain_outcomes`` if batches were spooled since the last one went and (unless ``now``) that was
        ``DRAIN_REQUEST_SECONDS`` ago; otherwise the flusher sends it when that time comes."""
        if not self._drain_owed:
            return
        moment = time.monotonic()
        if not now and moment < self._drain_requested_at + DRAIN_REQUEST_SECONDS:
            return
        self._drain_owed = False
        self._drain_requested_at = moment
        try:
            current_app.send_task(DRAIN_TASK)
        except Exception as exc:  # the batches are safe on disk: a failed request only delays them to beat's drain
            logger.debug("Outcome recorder: could not send drain_outcomes (%s)", type(exc).__name__)

    def _take(self, count: int) -> list[_Held]:
        buffer, batch = self._buffer, []
        for _ in range(min(count, len(buffer))):
            try:
                batch.append(buffer.popleft())
            except IndexError:  # emptied meanwhile by a settings change
                break
        return batch

    def _trim_held(self) -> None:
        # The buffer never exceeds the bound itself; the unsent batch holds the oldest events, so they go first.
        excess = len(self._buffer) + len(self._retry) - self._limit
        if excess > 0:
            dropped = min(excess, len(self._retry))
            del self._retry[:dropped]
            self.dropped_sending += dropped

    def _send(self, destination: _Destination, batch: list[_Held], *, reported: bool = False) -> int:
        """Send one batch (not empty); returns how many went. ``reported``: events of a reporter (``submit``), which
        stay within their share of each stream (``REPORTED_SHARE_OF_STREAM``) or raise ``StreamShareFull``."""
        if destination.redis_url:
            base, count, maxlen = destination.stream_key, destination.partitions, destination.stream_maxlen
            by_stream: dict[str, list[bytes]] = {}
            for event, payload in batch:
                # Each event into its episode key's partition (``partitions``), in the order they came.
                key = partitions.stream_key(base, partitions.partition(event_key(event), count))
                by_stream.setdefault(key, []).append(payload)
            client = self._client(destination.redis_url)
            pipe = client.pipeline(transaction=False)
            for key, entries in by_stream.items():
                if reported:
                    share = int(maxlen * REPORTED_SHARE_OF_STREAM)
                    self._add_within(keys=[key], args=[share, *entries], client=pipe)
                else:
                    self._add_all(keys=[key], args=[maxlen, *entries], client=pipe)
            added = pipe.execute()
            if reported and -1 in added:
                # The other partitions' events went: a reporter sends the batch again, and ingest stores those once.
                raise StreamShareFull("reported events would fill more than their share of a stream")
        elif destination.spool_dir:
            # Raises (the events stay held) unless the batch is on disk.
            spool.spool_write_encoded(Path(destination.spool_dir), [payload for _event, payload in batch])
            self._drain_owed = True
        else:
            # A broker that gives a dead worker's message back (acks_late).
            current_app.send_task(INGEST_TASK, args=[[orjson.loads(payload) for _event, payload in batch]])
        return len(batch)

    def _client(self, url: str) -> redis.Redis:
        if self._redis is None or url != self._redis_url:
            if self._redis is not None:
                self._redis.close()
            self._redis = redis.Redis.from_url(
                url, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS
            )
            self._add_all = self._redis.register_script(_ADD_ALL)
            self._add_within = self._redis.register_script(_ADD_WITHIN)
            self._redis_url = url
        return self._redis

    def _failed(self, destination: _Destination, exc: Exception) -> None:
        if self._paused_since_dropped is not None:
            return
        self._paused_since_dropped = self.dropped
        # Host and port, and the exception's class only: a URL or an exception's text may carry a password.
        logger.warning(
            "Outcome recording paused: %s unreachable (%s); holding up to %d events in memory, "
            "dropping the oldest beyond that",
            _where(destination),
            type(exc).__name__,
            self._limit,
        )

    def _resumed(self, destination: _Destination) -> None:
        if self._paused_since_dropped is None:
            return
        lost = self.dropped - self._paused_since_dropped
        self._paused_since_dropped = None
        logger.warning(
            "Outcome recording resumed (%s); %d events could not be recorded (dropped)", _where(destination), lost
        )

    # --- Synchronous paths ----------------------------------------------------------------------------------

    def submit(self, events: Sequence[OutcomeEvent]) -> None:
        if not events:
            return
        destination = _destination()
        with self._submit_lock:
            held = []
            for event in events:
                with contextlib.suppress(Exception):  # not an OutcomeEvent, or a value JSON cannot carry
                    held.append((event, event.to_json()))
            try:
                for start in range(0, len(held), destination.batch_size):
                    self.submitted += self._send(
                        destination, held[start : start + destination.batch_size], reported=True
                    )
            except Exception as exc:
                raise BufferUnavailable(f"the outcome buffer cannot take events ({type(exc).__name__})") from None
            self._request_drain(now=True)

    def flush(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        # The flusher may be in the middle of a send (at most one Redis timeout): wait for it, within the timeout.
        if not self._send_lock.acquire(timeout=max(0.0, timeout)):
            return False
        self._send_lock.release()
        try:
            delivered = self.send_held(deadline=deadline)
            self._request_drain(now=True)
            return delivered
        except Exception:
            logger.exception("Outcome recorder: unexpected failure while flushing")
            return False

    def stats(self) -> RecorderStats:
        return RecorderStats(
            recorded=self.recorded,
            sent=self.sent + self.submitted,
            dropped=self.dropped,
            held=len(self._buffer) + len(self._retry),
            paused=self._paused_since_dropped is not None,
        )

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        self._flusher.join(timeout)
        if self._redis is not None:
            self._redis.close()

    def reset(self) -> None:
        self.stop()
        self._init_state()

    def after_fork_in_child(self) -> None:
        # The parent's thread does not exist here, its locks may be held forever, its Redis sockets are shared,
        # and its held events are the parent's to send: start over.
        self._init_state()


def _where(destination: _Destination) -> str:
    if destination.redis_url:
        return f"Redis at {destination.label}"
    return "the outcome spool folder" if destination.spool_dir else "the Celery broker"


_recorder = _Recorder()
if hasattr(os, "register_at_fork"):
    # uvicorn --workers and Celery prefork fork: the child starts its own flusher on its first record.
    os.register_at_fork(after_in_child=_recorder.after_fork_in_child)


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("OUTCOMES", "REDIS_URL"):
        _recorder.settings_changed()


setting_changed.connect(_on_setting_changed, dispatch_uid="errcatalog.outcomes.recorder")


def record(event: OutcomeEvent) -> None:
    """Queue one event for recording; never raises, never waits for I/O."""
    try:
        _recorder.record(event)
    except Exception:  # recording must never break a tool call; the loss is counted
        _recorder.dropped_failed += 1


def submit(events: Sequence[OutcomeEvent]) -> None:
    """Send ``events`` to the buffer now (the REST batch endpoint). Raises ``BufferUnavailable`` on failure.

    ``OUTCOMES["ENABLED"]`` does not apply here: it switches off recording of this server's own tool calls, while
    a reporter that sends its events explicitly gets them stored (or a 503 it can retry on), never silently lost.
    """
    _recorder.submit(events)


def prepare() -> None:
    """At a server's start: do now the slow first part of sending (see ``_Recorder.prepare``)."""
    try:
        _recorder.prepare()
    except Exception:  # recording's settings are checked on use; a start must not fail here
        logger.exception("Outcome recorder: could not prepare")


def flush(timeout: float = 5.0) -> bool:
    """Send everything held now, waiting up to about ``timeout`` seconds; True when nothing is left held."""
    return _recorder.flush(timeout)


def stats() -> RecorderStats:
    """This process's recording counters."""
    return _recorder.stats()


def reset() -> None:
    """Stop the flusher thread and forget held events and counters (tests; the next record starts afresh)."""
    _recorder.reset()


@atexit.register
def _flush_at_exit() -> None:
    if _recorder._flusher.running:  # nothing was ever recorded in this process: nothing to do
        flush(timeout=2.0)

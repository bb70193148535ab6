"""Worker side of outcome recording: read the buffer, store events once, link retries into episodes.

- ``drain() -> int``: read the Redis streams (one per partition, ``partitions``) through the consumer group in
  batches, store, acknowledge after commit; take over batches a dead worker left unacknowledged. One drainer per
  partition at a time, so drainers in several workers share the partitions. Without Redis, store the batch files
  of the spool folder and delete each after commit. Returns new events stored.
- ``ingest_wire_batch(events: list[dict]) -> int``: check each with ``events.from_wire`` (bad ones are counted
  and logged, never stored), then ``ingest_events``.
- ``ingest_events(events: Sequence[OutcomeEvent]) -> int``: one transaction: insert the
  events not stored yet (by ID), link the new ones into episodes in time order.

Delivery is at-least-once: a worker that dies between its commit and its acknowledgement (or the deletion of
its batch file) leaves entries that another worker takes over and stores again, which changes nothing: the event
ID is the primary key, and only events not stored yet are linked into episodes (PostgreSQL: IDs looked up under
the correlation locks of their keys' slots, then inserted with ``ON CONFLICT DO NOTHING``; SQLite: the IDs
``INSERT ... ON CONFLICT DO NOTHING RETURNING`` reports).
Rollups find what changed by themselves (``OutcomeRecord.ingested_at``, ``Episode.changed_at``).

Which event opens, extends or ends which episode is decided by the pure rules (``episodes``) through their
database edge (``episode_store``); the bulk PostgreSQL statements share ``bulk_sql`` with that edge.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from errcatalog.outcomes import partitions, spool
from errcatalog.outcomes.bulk_sql import number_array, server_side_cursor, text_array
from errcatalog.outcomes.episode_store import episode_link_events
from errcatalog.outcomes.episodes import Link, event_key
from errcatalog.outcomes.events import InvalidEvent, OutcomeEvent, from_wire
from errcatalog.outcomes.models import OutcomeRecord

logger = logging.getLogger(__name__)

# A drain hands the worker back after about this long, so beat's other tasks get their turn on a solo worker.
DRAIN_SECONDS = 20.0
# A drainer holds one partition at a time, for at most this long before it lets go and takes the partition with
# the most waiting events that no other drainer holds: that is how drainers spread over the partitions, and how a
# worker that joins finds one free within a slice.
SLICE_SECONDS = 2.0
# Rows per INSERT statement: 18 parameters each stays under SQLite's 32,766 and PostgreSQL's 65,535 limits.
_INSERT_CHUNK = 1000
# PostgreSQL advisory locks, one per slot of episode keys (``partitions.SLOTS``), under this first key. Any fixed
# number works: it only has to be the same in every process that correlates episodes.
_SLOT_LOCK_CLASS = 0x6572_6361

_COLUMNS = (
    "id", "occurred_at", "source", "tool", "client", "session", "outcome", "code", "variant", "locale", "upstream",
    "interactive", "elicitation", "attempt", "latency_ms", "sentry_event_id", "trace_id", "episode_id",
    "ingested_at",
)  # fmt: skip


# --- Storing ------------------------------------------------------------------------------------------------


def ingest_wire_batch(events: list[dict[str, Any]]) -> int:
    """Check and store wire events (the Celery fallback task and the REST API use it); returns new events stored."""
    parsed: list[OutcomeEvent] = []
    invalid = 0
    for wire in events:
        try:
            parsed.append(from_wire(wire))
        except InvalidEvent:
            invalid += 1
    _log_invalid(invalid)
    return ingest_events(parsed)


def ingest_events(events: Sequence[OutcomeEvent]) -> int:
    """Store the events whose IDs are not stored yet and link those into episodes, in one transaction.

    Returns how many were new. Events that would not fit the columns are left out and counted as invalid.
    """
    unique = _fitting_and_unique(events)
    if not unique:
        return 0
    by_source: dict[str, list[OutcomeEvent]] = {}
    for event in unique:
        by_source.setdefault(event.source, []).append(event)
    # Reporters' clients are namespaced under their token, so episodes never span two sources.
    with transaction.atomic():
        if connection.vendor == "postgresql":
            _lock_slots(unique)
        return sum(_ingest_from(source, group) for source, group in by_source.items())


def _ingest_from(source: str, events: list[OutcomeEvent]) -> int:
    if connection.vendor == "postgresql":
        return _ingest_postgresql(events, source=source)
    # SQLite serialises writers itself: the INSERT takes the write lock before anything is read, and its
    # RETURNING clause names the rows that were new.
    new_ids = _insert_new_values(events, source=source)
    new = [event for event in events if event.id in new_ids]
    links = episode_link_events(events=new)
    _write_links([link for link in links if link.episode is not None])
    return len(new)


def _lock_slots(events: Sequence[OutcomeEvent]) -> None:
    """Take the transaction-level advisory lock of every slot the events' episode keys fall in (PostgreSQL).

    Every ingest (drainers, REST reporters, fallback tasks) takes them before it reads anything, so the IDs it
    finds stored cannot change before its insert, and two batches never decide about the same open episode at
    once. A drainer's batch comes from one partition, whose slots no other partition has: drainers of different
    partitions never wait for each other. The slots go in ascending order (``unnest`` yields an array in its
    order), so two transactions never wait for each other in a circle.
    """
    slots = partitions.slots_of(event_key(event) for event in events)
    with server_side_cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, slot) FROM unnest(%s::int[]) AS slot", [_SLOT_LOCK_CLASS, slots]
        )


def _ingest_postgresql(events: list[OutcomeEvent], *, source: str) -> int:
    """Correlate first, then insert each new event once with its episode and attempt already set.

    Runs under the slot locks (``_lock_slots``); ``ON CONFLICT DO NOTHING`` stays as a second guard. Inserting
    linked rows directly spares PostgreSQL an UPDATE (a second row version and index entries) for every retry.
    """
    with server_side_cursor() as cursor:
        cursor.execute(
            "SELECT id FROM errcatalog_outcomeevent WHERE id = ANY(%s::uuid[])", [text_array([e.id for e in events])]
        )
        stored = {value.hex for (value,) in cursor.fetchall()}
    new = [event for event in events if event.id not in stored]
    if not new:
        return 0
    linked = {link.event.id: link for link in episode_link_events(events=new) if link.episode is not None}
    inserted = _insert_new_postgresql(new, source=source, linked=linked)
    if len(inserted) != len(new):  # pragma: no cover - the slot locks make this impossible
        raise RuntimeError("outcome events appeared while their correlation locks were held")
    return len(new)


def _fitting_and_unique(events: Iterable[OutcomeEvent]) -> list[OutcomeEvent]:
    unique = list({event.id: event for event in events}.values())
    kept = [event for event in unique if _fits(event)]
    _log_invalid(len(unique) - len(kept))
    return kept


def _fits(event: OutcomeEvent) -> bool:
    # from_wire allows 128 characters for every name; some columns are shorter. A value too long for its
    # column would fail the whole batch's transaction again on every redelivery.
    limits = _MAX_LENGTH
    return (
        len(event.tool) <= limits["tool"]
        and len(event.client or "") <= limits["client"]
        and len(event.session or "") <= limits["session"]
        and len(event.code or "") <= limits["code"]
        and len(event.variant or "") <= limits["variant"]
        and len(event.locale or "") <= limits["locale"]
        and len(event.upstream or "") <= limits["upstream"]
        and len(event.sentry_event_id or "") <= limits["sentry_event_id"]
    )


_MAX_LENGTH = {
    name: OutcomeRecord._meta.get_field(name).max_length
    for name in ("tool", "client", "session", "code", "variant", "locale", "upstream", "sentry_event_id")
}


def _log_invalid(count: int) -> None:
    if count:
        # The count only: an event's content is a reporter's text and stays out of logs.
        logger.warning("outcomes: %d invalid event(s) dropped", count)


_PG_INSERT = """
INSERT INTO errcatalog_outcomeevent
    (id, occurred_at, source, tool, client, session, outcome, code, variant, locale, upstream, interactive,
     elicitation, attempt, latency_ms, sentry_event_id, trace_id, episode_id, ingested_at)
SELECT e.id, to_timestamp(e.ts), %s, e.tool, e.client, e.session, e.outcome, e.code, e.variant, e.locale,
       e.upstream, e.interactive, e.elicitation, e.attempt, e.latency_ms, e.sentry_event_id, e.trace_id,
       e.episode_id, %s
FROM unnest(%s::uuid[], %s::float8[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
            %s::text[], %s::text[], %s::bool[], %s::text[], %s::float8[], %s::text[], %s::text[], %s::int[],
            %s::bigint[])
     AS e(id, ts, tool, client, session, outcome, code, variant, locale, upstream, interactive, elicitation,
          latency_ms, sentry_event_id, trace_id, attempt, episode_id)
ON CONFLICT (id) DO NOTHING
RETURNING id
"""


def _insert_new_postgresql(events: Sequence[OutcomeEvent], *, source: str, linked: dict[str, Link]) -> set[str]:
    """One INSERT over column arrays (``unnest``): a statement with thousands of placeholders costs more to
    build and parse than the insert itself. Returns the IDs inserted."""
    links = [linked.get(event.id) for event in events]
    columns = (
        text_array([event.id for event in events]),
        number_array(event.ts for event in events),
        text_array([event.tool for event in events]),
        text_array([event.client or "" for event in events]),
        text_array([event.session or "" for event in events]),
        text_array([event.outcome for event in events]),
        text_array([event.code or "" for event in events]),
        text_array([event.variant or "" for event in events]),
        text_array([event.locale or "" for event in events]),
        text_array([event.upstream or "" for event in events]),
        "{" + ",".join("t" if event.interactive else "f" for event in events) + "}",
        text_array([event.elicitation or "" for event in events]),
        number_array(event.latency_ms for event in events),
        text_array([event.sentry_event_id or "" for event in events]),
        text_array([event.trace_id or "" for event in events]),
        "{" + ",".join(str(link.attempt) if link else "0" for link in links) + "}",
        "{" + ",".join(str(link.episode.pk) if link else "NULL" for link in links) + "}",
    )
    with server_side_cursor() as cursor:
        cursor.execute(_PG_INSERT, [source, timezone.now(), *columns])
        return {value.hex for (value,) in cursor.fetchall()}


def _insert_new_values(events: Sequence[OutcomeEvent], *, source: str) -> set[str]:
    """``INSERT ... VALUES ... ON CONFLICT (id) DO NOTHING RETURNING id`` (SQLite 3.35+): the IDs that were new."""
    table = connection.ops.quote_name(OutcomeRecord._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(name) for name in _COLUMNS)
    id_field = OutcomeRecord._meta.pk
    adapt_datetime = connection.ops.adapt_datetimefield_value
    ingested_at = adapt_datetime(timezone.now())
    new_ids: set[str] = set()
    with connection.cursor() as cursor:
        for start in range(0, len(events), _INSERT_CHUNK):
            chunk = events[start : start + _INSERT_CHUNK]
            params: list[Any] = []
            for event in chunk:
                params += (
                    id_field.get_db_prep_value(event.id, connection),
                    adapt_datetime(datetime.fromtimestamp(event.ts, UTC)),
                    source,
                    event.tool,
                    event.client or "",
                    event.session or "",
                    event.outcome,
                    event.code or "",
                    event.variant or "",
                    event.locale or "",
                    event.upstream or "",
                    event.interactive,
                    event.elicitation or "",
                    0,
                    event.latency_ms,
                    event.sentry_event_id or "",
                    event.trace_id or "",
                    None,
                    ingested_at,
                )
            row = "(" + ", ".join(["%s"] * len(_COLUMNS)) + ")"
            cursor.execute(
                f"INSERT INTO {table} ({columns}) VALUES {', '.join([row] * len(chunk))} "  # noqa: S608 (names are ours)
                "ON CONFLICT (id) DO NOTHING RETURNING id",
                params,
            )
            new_ids.update(_hex(value) for (value,) in cursor.fetchall())
    return new_ids


def _hex(value: Any) -> str:
    return value.hex if isinstance(value, uuid.UUID) else str(value).replace("-", "")


def _write_links(links: Sequence[Link]) -> None:
    """SQLite: write each linked event's episode and attempt, one UPDATE ... FROM per chunk (SQLite 3.33+)."""
    if not links:
        return
    with connection.cursor() as cursor:
        id_field = OutcomeRecord._meta.pk
        for start in range(0, len(links), _INSERT_CHUNK):
            chunk = links[start : start + _INSERT_CHUNK]
            params: list[Any] = []
            for link in chunk:
                params += (id_field.get_db_prep_value(link.event.id, connection), link.episode.pk, link.attempt)
            values = ", ".join(["(%s, %s, %s)"] * len(chunk))
            cursor.execute(
                f"WITH linked (event_id, episode_id, attempt) AS (VALUES {values}) "  # noqa: S608 (fixed names)
                "UPDATE errcatalog_outcomeevent SET episode_id = linked.episode_id, attempt = linked.attempt "
                "FROM linked WHERE errcatalog_outcomeevent.id = linked.event_id",
                params,
            )


# --- Draining the buffer (Redis streams or spool) --------------------------------------------------------------


def drain() -> int:
    """Store what waits in the buffer; returns the number of new events.

    Without Redis the buffer is the spool folder (``OUTCOMES["SPOOL_DIR"]``, Celery's filesystem broker: see
    ``spool``), drained oldest batch first, each batch file deleted after its commit; with neither there is
    nothing to drain (batches travel inside ``errcatalog.ingest_outcomes`` tasks then).

    With Redis the buffer is one stream per partition (``partitions``). A drainer holds one partition at a time
    (a Redis lock per partition, so each partition is correlated in its stream's order): the one with the most
    waiting entries that no other drainer holds. It first takes over entries another worker read but never
    acknowledged for ``CLAIM_IDLE_SECONDS`` (that worker died), then reads new entries until the partition is
    empty or ``SLICE_SECONDS`` passed, lets go, and takes the next. It returns when every partition with entries
    was emptied once or is held by another drainer, or after ``DRAIN_SECONDS``. Entries are acknowledged and
    deleted only after their transaction committed.

    While one batch's transaction runs in PostgreSQL, a second thread reads and parses the next batch of the same
    partition (the driver and the socket release the GIL while they wait), so reading overlaps storing. A batch
    that was read is always stored before its partition's lock is let go.
    """
    if not settings.REDIS_URL:
        spool_dir = settings.OUTCOMES["SPOOL_DIR"]
        if not spool_dir:
            return 0
        return spool.spool_drain(Path(spool_dir), ingest_wire_batch, deadline=time.monotonic() + DRAIN_SECONDS)
    client = _redis(settings.REDIS_URL)
    deadline = time.monotonic() + DRAIN_SECONDS
    emptied: set[str] = set()
    stored = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="outcomes-read") as reader:
        while time.monotonic() < deadline:
            stream = _take_partition(client, skip=emptied)
            if stream is None:
                break
            try:
                count, empty = stream.drain(reader, until=min(deadline, time.monotonic() + SLICE_SECONDS))
            finally:
                stream.unlock()
            stored += count
            if empty:
                emptied.add(stream.key)
    return stored


def backlog(client: redis.Redis) -> dict[str, int]:
    """Entries in each partition's stream that has any (read and unacknowledged ones included), in one round trip.

    Every partition that can exist is counted, not only the configured ones: streams a larger partition count
    left behind are drained too.
    """
    keys = partitions.stream_keys(settings.OUTCOMES["STREAM_KEY"])
    with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.xlen(key)
        lengths = pipe.execute()
    return {key: int(length) for key, length in zip(keys, lengths, strict=True) if length}


def _take_partition(client: redis.Redis, *, skip: set[str]) -> _Stream | None:
    """Lock the partition with the most waiting entries that no drainer holds; None when every one is taken."""
    waiting = backlog(client)
    for key in sorted(waiting, key=waiting.__getitem__, reverse=True):
        if key in skip:
            continue
        stream = _Stream(client, key)
        if stream.lock():
            return stream
    return None


_clients: dict[str, redis.Redis] = {}


def _redis(url: str) -> redis.Redis:
    # One client (and connection pool) per process; a forked child builds its own because its pid differs.
    key = f"{os.getpid()}:{url}"
    if key not in _clients:
        _clients[key] = redis.Redis.from_url(url, socket_timeout=30, health_check_interval=30)
    return _clients[key]


_REFRESH = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class _Stream:
    """One partition's stream as its drainer sees it: its lock, its consumer group and its batches."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        outcomes = settings.OUTCOMES
        self.client = client
        self.key = key
        self.group = outcomes["STREAM_GROUP"]
        self.batch_size = outcomes["BATCH_SIZE"]
        self.claim_idle_ms = outcomes["CLAIM_IDLE_SECONDS"] * 1000
        self.consumer = f"{socket.gethostname()}:{os.getpid()}"
        self.lock_key = f"{key}:drainer"

    def lock(self) -> bool:
        # The lock lives as long as an unacknowledged batch stays its worker's: a dead drainer's lock expires
        # when its entries become claimable, and the next drainer of the partition takes both over.
        return bool(self.client.set(self.lock_key, self.consumer, nx=True, px=self.claim_idle_ms))

    def still_locked(self) -> bool:
        return bool(self.client.eval(_REFRESH, 1, self.lock_key, self.consumer, self.claim_idle_ms))

    def unlock(self) -> None:
        self.client.eval(_RELEASE, 1, self.lock_key, self.consumer)

    def drain(self, reader: ThreadPoolExecutor, *, until: float) -> tuple[int, bool]:
        """Store what a dead drainer left, then new batches until the stream is empty or ``until`` passed.

        Returns the events stored and whether the stream was found empty. ``reader`` reads the next batch while
        this thread stores the current one.
        """
        self.ensure_group()
        stored = self.take_over_dead()
        upcoming = reader.submit(self.read_new)
        while True:
            batch = upcoming.result()
            if not batch.entry_ids:
                return stored, True
            more = time.monotonic() < until and self.still_locked()
            if more:
                upcoming = reader.submit(self.read_new)
            stored += self.store(batch)
            if not more:
                return stored, False

    def ensure_group(self) -> None:
        try:
            self.client.xgroup_create(self.key, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def take_over_dead(self) -> int:
        stored = 0
        start = "0-0"
        while self.still_locked():
            start, entries, *_deleted = self.client.xautoclaim(
                self.key, self.group, self.consumer, self.claim_idle_ms, start_id=start, count=self.batch_size
            )
            if entries:
                stored += self.store(_Batch.of(entries))
            if start in (b"0-0", "0-0"):
                break
        return stored

    def read_new(self) -> _Batch:
        response = self.client.xreadgroup(self.group, self.consumer, {self.key: ">"}, count=self.batch_size)
        return _Batch.of(response[0][1] if response else [])

    def store(self, batch: _Batch) -> int:
        """Store a batch, then acknowledge and delete its entries (invalid ones too: they never block the stream)."""
        _log_invalid(batch.invalid)
        stored = ingest_events(batch.events)
        with self.client.pipeline(transaction=False) as pipe:
            pipe.xack(self.key, self.group, *batch.entry_ids)
            pipe.xdel(self.key, *batch.entry_ids)
            pipe.execute()
        return stored


@dataclass(frozen=True, slots=True)
class _Batch:
    """Stream entries as read: their IDs (to acknowledge), the valid events and how many were invalid."""

    entry_ids: list[bytes]
    events: list[OutcomeEvent]
    invalid: int

    @classmethod
    def of(cls, entries: list[tuple[bytes, dict[bytes, bytes] | None]]) -> _Batch:
        events: list[OutcomeEvent] = []
        invalid = 0
        now = time.time()
        for _entry_id, fields in entries:
            try:
                events.append(from_wire(json.loads((fields or {})[b"e"]), now=now))
            except (KeyError, ValueError, TypeError):  # InvalidEvent and JSON/Unicode errors are ValueErrors
                invalid += 1
        return cls([entry_id for entry_id, _fields in entries], events, invalid)

"""Ingestion: each event stored once whatever is redelivered, and the Redis stream drained at least once."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid

import pytest
import redis
from django.conf import settings

from errcatalog.outcomes import ingest, partitions, recorder
from errcatalog.outcomes.episodes import event_key
from errcatalog.outcomes.events import InvalidEvent, OutcomeEvent, from_wire
from errcatalog.outcomes.models import Episode, OutcomeRecord
from errcatalog.outcomes.spool import spool_size, spool_write

pytestmark = pytest.mark.django_db


def story(client: str = "token:1") -> list[OutcomeEvent]:
    now = time.time()
    return [
        OutcomeEvent(tool="search", client=client, outcome="error", code="E_X", variant="v1", ts=now - 3),
        OutcomeEvent(tool="search", client=client, outcome="ok", ts=now - 2, latency_ms=12.5),
        OutcomeEvent(tool="list", client=client, outcome="ok", ts=now - 1),
    ]


def snapshot() -> tuple[list, list]:
    events = list(OutcomeRecord.objects.order_by("id").values_list("id", "attempt", "episode_id", "ingested_at"))
    episodes = list(Episode.objects.order_by("pk").values())
    return events, episodes


@pytest.fixture
def stream(settings, redis_url):
    """The outcome stream on the test's Redis, with ``REDIS_URL`` set as in a worker."""
    settings.REDIS_URL = redis_url
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def xadd(client: redis.Redis, payloads: list[bytes]) -> list[bytes]:
    key = settings.OUTCOMES["STREAM_KEY"]
    return [client.xadd(key, {"e": payload}) for payload in payloads]


# --- ingest_events ---------------------------------------------------------------------------------------------


def test_ingest_stores_every_field_and_returns_the_new_count():
    event = OutcomeEvent(
        tool="search", client="token:4", session="s-1", outcome="error", code="E_X", variant="v2",
        interactive=True, latency_ms=3.25, elicitation="requested", sentry_event_id="f" * 32, ts=time.time() - 1,
        source="api",
    )  # fmt: skip
    assert ingest.ingest_events([event]) == 1
    row = OutcomeRecord.objects.get()
    assert row.id == uuid.UUID(event.id)
    assert abs(row.occurred_at.timestamp() - event.ts) < 1e-3
    assert (row.source, row.tool, row.client, row.session, row.outcome, row.code, row.variant) == (
        "api", "search", "token:4", "s-1", "error", "E_X", "v2",
    )  # fmt: skip
    assert (row.interactive, row.latency_ms, row.elicitation, row.sentry_event_id) == (
        True,
        3.25,
        "requested",
        "f" * 32,
    )
    assert row.episode.code == "E_X" and row.attempt == 0 and row.ingested_at is not None


def test_redelivered_events_change_nothing():
    events = story()
    assert ingest.ingest_events(events) == 3
    before = snapshot()
    assert ingest.ingest_events(events) == 0
    assert ingest.ingest_events(list(reversed(events))) == 0
    assert snapshot() == before


def test_batch_mixing_stored_and_new_events_links_only_the_new_ones():
    first, recovery, other = story()
    assert ingest.ingest_events([first]) == 1
    assert ingest.ingest_events([first, recovery, first, other]) == 2
    episode = Episode.objects.get()
    assert (episode.ending, episode.retries, episode.recovered_at_attempt) == ("recovered", 1, 1)
    assert OutcomeRecord.objects.count() == 3


def test_events_too_long_for_the_columns_are_dropped_not_fatal(caplog):
    fits, *_ = story()
    too_long = OutcomeEvent(tool="search", outcome="error", code="E_" + "X" * 100, ts=time.time())
    with caplog.at_level(logging.WARNING, logger="errcatalog.outcomes.ingest"):
        assert ingest.ingest_events([fits, too_long]) == 1
    assert "1 invalid event(s)" in caplog.text and "XXXX" not in caplog.text


def test_large_batches_are_split_into_statements():
    now = time.time()
    events = [OutcomeEvent(tool="bulk", client=f"c{n % 7}", outcome="ok", ts=now - n / 1000) for n in range(2500)]
    assert ingest.ingest_events(events) == 2500
    assert ingest.ingest_events(events) == 0
    assert OutcomeRecord.objects.count() == 2500


# --- ingest_wire_batch -------------------------------------------------------------------------------------------


def test_wire_batch_counts_and_skips_invalid_events(caplog):
    good = [event.to_wire() for event in story()]
    bad = [{"id": "nope"}, "text", {**good[0], "id": uuid.uuid4().hex, "outcome": "maybe"}]
    with caplog.at_level(logging.WARNING, logger="errcatalog.outcomes.ingest"):
        assert ingest.ingest_wire_batch(good + bad) == 3
    assert "3 invalid event(s)" in caplog.text and "nope" not in caplog.text
    assert OutcomeRecord.objects.count() == 3
    assert ingest.ingest_wire_batch(good) == 0


def test_a_calls_trace_id_is_stored_with_its_outcome():
    traced = OutcomeEvent(tool="search", outcome="ok", trace_id="4bf92f3577b34da6a3ce929d0e0e4736", ts=time.time())
    assert from_wire(traced.to_wire()).trace_id == traced.trace_id
    assert ingest.ingest_wire_batch([traced.to_wire()]) == 1
    assert OutcomeRecord.objects.get().trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"


def test_every_field_of_an_event_survives_its_wire_form():
    full = OutcomeEvent(
        tool="search", outcome="error", client="token:7", session="s-1", code="E_UPSTREAM", variant="plain",
        locale="de", upstream="web", interactive=True, latency_ms=12.3456, elicitation="decline",
        sentry_event_id="a" * 32, trace_id="4bf92f3577b34da6a3ce929d0e0e4736", source="api", ts=time.time(),
    )  # fmt: skip
    assert set(full.to_wire()) == {f.name for f in dataclasses.fields(OutcomeEvent)}
    assert from_wire(full.to_wire()) == dataclasses.replace(full, latency_ms=12.346)
    bare = OutcomeEvent(tool="search", outcome="ok", ts=time.time())
    assert set(bare.to_wire()) == {"id", "ts", "tool", "outcome", "latency_ms"}  # defaults are left out
    assert from_wire(bare.to_wire()) == bare


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("trace_id", "0" * 32),  # the invalid trace ID
        ("trace_id", "4BF92F3577B34DA6A3CE929D0E0E4736"),
        ("trace_id", "4bf92f3577b34da6a3ce929d0e0e473"),
        ("trace_id", 42),
        # A trailing newline would pass a ``$`` anchor: every name is matched whole.
        ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736\n"),
        ("client", "token:1\n"),
        ("code", "E_UPSTREAM\n"),
        ("locale", "de\n"),
        ("upstream", "web\n"),
    ],
)
def test_a_wire_event_with_a_malformed_field_is_refused_naming_only_the_field(field, value):
    wire = {**OutcomeEvent(tool="search", outcome="ok", ts=time.time()).to_wire(), field: value}
    with pytest.raises(InvalidEvent) as refused:
        from_wire(wire)
    assert str(refused.value).startswith(f"{field}:")


# --- drain -------------------------------------------------------------------------------------------------------


def test_drain_without_redis_or_spool_does_nothing(settings):
    settings.REDIS_URL = ""
    settings.OUTCOMES = {**settings.OUTCOMES, "SPOOL_DIR": ""}
    assert ingest.drain() == 0


def test_drain_without_redis_stores_the_spooled_batches_once_each(settings, tmp_path):
    settings.REDIS_URL = ""
    settings.OUTCOMES = {**settings.OUTCOMES, "SPOOL_DIR": str(tmp_path)}
    first, second = story("token:1"), story("token:2")
    spool_write(tmp_path, [event.to_wire() for event in first] + [{"id": "not an event"}])
    spool_write(tmp_path, [event.to_wire() for event in second + first])  # a batch sent again, partly

    assert ingest.drain() == 6
    assert spool_size(tmp_path) == 0
    assert OutcomeRecord.objects.count() == 6
    assert Episode.objects.filter(ending="recovered").count() == 2


def test_drain_stores_acknowledges_and_deletes_including_invalid_entries(stream, caplog):
    events = story("token:1") + story("token:2")
    xadd(stream, [event.to_json() for event in events] + [b"{broken", b"[]", json.dumps({"id": 1}).encode()])
    with caplog.at_level(logging.WARNING, logger="errcatalog.outcomes.ingest"):
        assert ingest.drain() == 6
    assert "3 invalid event(s)" in caplog.text
    key, group = settings.OUTCOMES["STREAM_KEY"], settings.OUTCOMES["STREAM_GROUP"]
    assert stream.xlen(key) == 0
    assert stream.xpending(key, group)["pending"] == 0
    assert OutcomeRecord.objects.count() == 6
    assert Episode.objects.filter(ending="recovered").count() == 2
    assert ingest.drain() == 0


def test_drain_reads_batch_after_batch(stream, settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "BATCH_SIZE": 4}
    now = time.time()
    events = [OutcomeEvent(tool="t", client="c", outcome="error", code="E_X", ts=now - 50 + n) for n in range(10)]
    xadd(stream, [event.to_json() for event in events])
    assert ingest.drain() == 10
    # Correlated across batches in stream order: 0 opens, 1-3 retry (the third failed retry: exhausted), 4 opens,
    # 5-7 retry (exhausted), 8 opens, 9 retries (still open).
    assert list(Episode.objects.order_by("started_at").values_list("ending", "retries")) == [
        ("exhausted", 3),
        ("exhausted", 3),
        ("open", 1),
    ]
    assert list(OutcomeRecord.objects.order_by("occurred_at").values_list("attempt", flat=True)) == [
        *[0, 1, 2, 3] * 2,
        0,
        1,
    ]


def test_redelivered_stream_entries_are_stored_once(stream):
    events = story()
    xadd(stream, [event.to_json() for event in events])
    assert ingest.drain() == 3
    before = snapshot()
    xadd(stream, [event.to_json() for event in events])  # the recorder retried a send that had arrived
    assert ingest.drain() == 0
    assert snapshot() == before
    assert stream.xlen(settings.OUTCOMES["STREAM_KEY"]) == 0


def test_drain_takes_over_a_dead_workers_unacknowledged_batch(stream):
    key, group = settings.OUTCOMES["STREAM_KEY"], settings.OUTCOMES["STREAM_GROUP"]
    stream.xgroup_create(key, group, id="0", mkstream=True)
    events = story()
    ids = xadd(stream, [event.to_json() for event in events])
    # Another worker read the entries and died before acknowledging them, long enough ago to count as dead.
    stream.xreadgroup(group, "dead-host:1", {key: ">"})
    idle_ms = (settings.OUTCOMES["CLAIM_IDLE_SECONDS"] + 5) * 1000
    stream.xclaim(key, group, "dead-host:1", 0, ids, idle=idle_ms)
    assert ingest.drain() == 3
    assert stream.xpending(key, group)["pending"] == 0
    assert OutcomeRecord.objects.count() == 3


def test_drain_leaves_a_recently_taken_batch_to_its_worker(stream):
    key, group = settings.OUTCOMES["STREAM_KEY"], settings.OUTCOMES["STREAM_GROUP"]
    stream.xgroup_create(key, group, id="0", mkstream=True)
    xadd(stream, [event.to_json() for event in story()])
    stream.xreadgroup(group, "busy-host:1", {key: ">"})
    assert ingest.drain() == 0
    assert stream.xpending(key, group)["pending"] == 3


def test_one_drainer_per_partition_at_a_time(stream):
    xadd(stream, [event.to_json() for event in story()])  # partition 0's stream
    lock_key = f"{settings.OUTCOMES['STREAM_KEY']}:drainer"
    stream.set(lock_key, "other-host:1", px=60_000)
    assert ingest.drain() == 0
    assert OutcomeRecord.objects.count() == 0
    stream.delete(lock_key)
    assert ingest.drain() == 3
    assert not stream.exists(lock_key)  # released after draining


# --- Partitions -----------------------------------------------------------------------------------------------


def caller_in(partition: int, *, count: int = 4, tool: str = "search", skip: int = 0) -> str:
    """A client whose calls of ``tool`` travel in ``partition`` (the ``skip``-th such client)."""
    found = (f"token:{n}" for n in range(10_000) if partitions.partition((tool, f"token:{n}", ""), count) == partition)
    for _ in range(skip):
        next(found)
    return next(found)


def retried(client: str, *, tool: str = "search") -> list[OutcomeEvent]:
    """An error of ``client`` and the retry that recovers it: one episode key."""
    now = time.time()
    return [
        OutcomeEvent(tool=tool, client=client, outcome="error", code="E_X", ts=now - 2),
        OutcomeEvent(tool=tool, client=client, outcome="ok", ts=now - 1),
    ]


def test_the_recorder_sends_each_event_to_its_keys_partition_and_a_drain_empties_them_all(stream, settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 4, "ENABLED": True, "FLUSH_INTERVAL_MS": 600_000}
    recorder.reset()
    events = [event for n in range(40) for event in story(f"token:{n}")]
    try:
        for event in events:
            recorder.record(event)
        assert recorder.flush(timeout=10) is True
    finally:
        recorder.reset()
    base = settings.OUTCOMES["STREAM_KEY"]
    for index in range(4):
        ids = [json.loads(fields[b"e"])["id"] for _id, fields in stream.xrange(partitions.stream_key(base, index))]
        expected = [event.id for event in events if partitions.partition(event_key(event), 4) == index]
        assert ids == expected and ids  # every partition has events, each in the order they were recorded
    assert not stream.exists(partitions.stream_key(base, 4))

    assert ingest.drain() == len(events)
    assert ingest.backlog(stream) == {}
    assert OutcomeRecord.objects.count() == len(events)
    assert Episode.objects.filter(ending="recovered").count() == 40


def test_a_partition_another_drainer_holds_is_left_to_it_and_the_others_are_drained(stream, settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 4}
    base = settings.OUTCOMES["STREAM_KEY"]
    held, free = caller_in(1), caller_in(2)
    stream.xadd(partitions.stream_key(base, 1), {"e": retried(held)[0].to_json()})
    for event in retried(free):
        stream.xadd(partitions.stream_key(base, 2), {"e": event.to_json()})
    stream.set(f"{partitions.stream_key(base, 1)}:drainer", "other-host:1", px=60_000)

    assert ingest.drain() == 2
    assert set(OutcomeRecord.objects.values_list("client", flat=True)) == {free}
    assert ingest.backlog(stream) == {partitions.stream_key(base, 1): 1}


def test_partitions_a_larger_count_left_behind_are_drained_too(stream, settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 2}
    base = settings.OUTCOMES["STREAM_KEY"]
    events = retried(caller_in(5, count=8))  # sent while the count was 8
    for event in events:
        stream.xadd(partitions.stream_key(base, 5), {"e": event.to_json()})
    assert ingest.drain() == 2
    assert Episode.objects.get().ending == "recovered"
    assert stream.xlen(partitions.stream_key(base, 5)) == 0


def test_a_drain_goes_from_partition_to_partition_in_slices(stream, settings, monkeypatch):
    # A slice that ends after one batch: every partition is drained batch by batch in turn, nothing is left.
    monkeypatch.setattr(ingest, "SLICE_SECONDS", 0.0)
    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 2, "BATCH_SIZE": 3}
    base = settings.OUTCOMES["STREAM_KEY"]
    events = {
        index: [e for skip in range(4) for e in retried(caller_in(index, count=2, skip=skip))] for index in (0, 1)
    }
    for index, group in events.items():
        for event in group:
            stream.xadd(partitions.stream_key(base, index), {"e": event.to_json()})
    assert ingest.drain() == 16
    assert Episode.objects.filter(ending="recovered").count() == 8
    assert ingest.backlog(stream) == {}


def test_names_with_quotes_backslashes_and_null_are_stored_verbatim():
    # Events built in-process (not through from_wire) may hold any text; the bulk insert must not misread it.
    names = ['a"b', "c\\d", "NULL", "", "{x,y}"]
    now = time.time()
    events = [OutcomeEvent(tool=name or "t", client=name, session="s", outcome="ok", ts=now - 1) for name in names]
    events.append(OutcomeEvent(tool="NULL", client='q"', session="\\", outcome="error", code='E"\\', ts=now))
    assert ingest.ingest_events(events) == len(events)
    assert set(OutcomeRecord.objects.values_list("client", flat=True)) == {*names, 'q"'}
    episode = Episode.objects.get()
    assert (episode.tool, episode.client, episode.session, episode.code) == ("NULL", 'q"', "\\", 'E"\\')


# --- Correlation locks (PostgreSQL) ---------------------------------------------------------------------------
# SQLite lets one writer at a time into the whole database, so ingests there need no lock of their own; these
# tests check on PostgreSQL that an ingest waits exactly for the ingests of its own keys' slots.


@pytest.fixture
def other_transaction(tmp_path):
    """PostgreSQL: a second session on the test database, as another worker's ingest transaction; and this
    session's lock waits cut short, so that a wait shows up as an error instead of a hang."""
    from django.db import connection

    from tests.support.processes import WorkerDatabase

    if connection.vendor != "postgresql":
        yield None
        return
    import psycopg

    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '500ms'")
    try:
        with psycopg.connect(WorkerDatabase(tmp_path).url.replace("postgres://", "postgresql://", 1)) as other:
            yield other
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


@pytest.mark.django_db(transaction=True)
def test_an_ingest_waits_only_for_an_ingest_holding_its_own_keys_slot(other_transaction):
    from django.db import OperationalError

    held, free = caller_in(0), caller_in(1)
    if other_transaction is not None:
        # Another ingest is inside its transaction with the slot of ``held``'s key.
        slot = partitions.slot(("search", held, ""))
        other_transaction.execute("SELECT pg_advisory_xact_lock(%s, %s)", [ingest._SLOT_LOCK_CLASS, slot])
        assert ingest.ingest_events(retried(free)) == 2  # another partition: no wait
        with pytest.raises(OperationalError, match="lock timeout"):
            ingest.ingest_events(retried(held))
        assert not OutcomeRecord.objects.filter(client=held).exists()
        other_transaction.rollback()
    else:
        assert ingest.ingest_events(retried(free)) == 2
    assert ingest.ingest_events(retried(held)) == 2
    assert Episode.objects.filter(ending="recovered").count() == 2


@pytest.mark.django_db(transaction=True)
def test_an_ingest_locks_only_the_open_episodes_of_its_own_keys(other_transaction):
    from django.db import OperationalError

    first, second = caller_in(0), caller_in(0, skip=1)  # the same tool and partition, two callers
    errors = {client: retried(client)[0] for client in (first, second)}
    assert ingest.ingest_events(list(errors.values())) == 2
    retries = {client: retried(client)[1] for client in (first, second)}
    if other_transaction is not None:
        # Something (the abandoned-episode clean-up, say) holds the open episode of ``first``.
        other_transaction.execute("SELECT id FROM errcatalog_episode WHERE client = %s FOR UPDATE", [first])
        with pytest.raises(OperationalError, match="lock timeout"):
            ingest.ingest_events([retries[first]])
        assert ingest.ingest_events([retries[second]]) == 1  # not held back by the other caller's episode
        other_transaction.rollback()
    else:
        assert ingest.ingest_events([retries[second]]) == 1
    assert ingest.ingest_events([retries[first]]) == 1
    assert Episode.objects.filter(ending="recovered").count() == 2

"""The request-path recorder against real Redis servers and Celery's real filesystem broker.

Every test starts from ``recorder.reset()`` with recording switched on explicitly, and ends with another reset, so
no flusher thread or held event outlives it. Tests that must not race the background flusher set a long flush
interval and send with ``recorder.flush``; the others let the flusher do its work and wait for the result.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time

import pytest
import redis

from errcatalog.outcomes import recorder
from errcatalog.outcomes.events import OutcomeEvent
from tests.support.recorder import (
    RECORDER_TOOLSET,
    celery_filesystem_broker,
    free_port,
    read_task_messages,
    throwaway_redis,
    wait_for,
)

STREAM = "errcatalog:outcomes:test"
LOGGER = "errcatalog.outcomes.recorder"
# Long enough that the background flusher never runs during a test that sends with ``flush`` itself.
NEVER_MS = 600_000


@pytest.fixture
def outcomes(settings):
    """Recording on, into a test stream; returns a function that overrides more OUTCOMES keys."""
    recorder.reset()

    def configure(**overrides) -> None:
        settings.OUTCOMES = {**settings.OUTCOMES, **overrides}

    # One partition: these tests read the stream back in order (test_partitions spreads events over several).
    configure(
        ENABLED=True, STREAM_KEY=STREAM, PARTITIONS=1, FLUSH_INTERVAL_MS=20, BATCH_SIZE=2000, LOCAL_BUFFER_MAX=50_000
    )
    yield configure
    recorder.reset()


@pytest.fixture
def stream(redis_url, settings):
    """The ``redis_url`` database as the recorder's buffer; yields a client to read the stream with."""
    settings.REDIS_URL = redis_url
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def make_event(number: int, **fields) -> OutcomeEvent:
    base = {"tool": "send_email", "outcome": "ok", "client": "token:7", "session": f"s{number}"}
    return OutcomeEvent(**{**base, **fields})


def stream_payloads(client: redis.Redis, key: str = STREAM) -> list[bytes]:
    entries = client.xrange(key)
    assert all(set(fields) == {b"e"} for _id, fields in entries)
    return [fields[b"e"] for _id, fields in entries]


def dead_redis_url(password: str = "") -> str:
    """A Redis URL nobody listens on (a port just found free)."""
    auth = f":{password}@" if password else ""
    return f"redis://{auth}127.0.0.1:{free_port()}/0"


# --- Redis stream ---------------------------------------------------------------------------------------------


def test_events_reach_the_stream_in_wire_format_and_order(outcomes, stream):
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, BATCH_SIZE=7)
    events = [make_event(n) for n in range(20)]
    events.append(
        make_event(20, outcome="error", code="SERVER_ERROR", variant="v2", interactive=True, sentry_event_id="ab" * 16)
    )
    for event in events:
        recorder.record(event)
    assert recorder.stats().held == 21

    assert recorder.flush(timeout=10) is True

    assert stream_payloads(stream) == [event.to_json() for event in events]
    assert recorder.stats() == recorder.RecorderStats(recorded=21, sent=21, dropped=0, held=0, paused=False)


def test_background_flusher_sends_without_being_asked(outcomes, stream):
    events = [make_event(n) for n in range(5)]
    for event in events:
        recorder.record(event)

    wait_for(lambda: stream.xlen(STREAM) == 5, what="the flusher to send 5 events")
    assert stream_payloads(stream) == [event.to_json() for event in events]
    wait_for(lambda: recorder.stats().sent == 5, what="the sent counter")


def test_a_full_batch_wakes_the_flusher_before_its_interval(outcomes, stream):
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, BATCH_SIZE=10)
    recorder.record(make_event(0))
    recorder.flush(timeout=10)  # the flusher learns the batch size from the settings when it sends
    for n in range(1, 11):
        recorder.record(make_event(n))

    wait_for(lambda: stream.xlen(STREAM) == 11, what="a full batch to be sent long before the interval")


def test_half_of_max_unsent_wakes_the_flusher_so_a_kill_loses_at_most_max_unsent(outcomes, stream):
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, BATCH_SIZE=2000, MAX_UNSENT=20)
    for n in range(9):
        recorder.record(make_event(n))
    assert recorder.stats().held == 9  # below half: waits for the interval
    recorder.record(make_event(9))

    wait_for(lambda: stream.xlen(STREAM) == 10, what="half of MAX_UNSENT to be sent long before the interval")


def test_a_flusher_round_sends_what_was_held_when_it_began_and_leaves_later_calls_to_the_next(
    outcomes, stream, monkeypatch
):
    # Calls keep arriving while a batch is on its way. Were the round to chase them, each send would carry the
    # handful that came during the previous one: under steady load, a Redis round trip (or a spool file and a
    # Celery message) per few calls, with the flusher never resting.
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, BATCH_SIZE=4)
    for n in range(10):
        recorder.record(make_event(n))
    real_send, batches = recorder._Recorder._send, []

    def send_while_calls_arrive(self, destination, batch):
        batches.append(len(batch))
        recorder.record(make_event(100 + len(batches)))  # a call answered during this send
        return real_send(self, destination, batch)

    monkeypatch.setattr(recorder._Recorder, "_send", send_while_calls_arrive)

    assert recorder._recorder.send_held(deadline=None, everything=False) is True
    assert batches == [4, 4, 2]  # the ten held when the round began, in full batches
    assert recorder.stats().held == 3  # the three answered meanwhile wait for the next round

    monkeypatch.setattr(recorder._Recorder, "_send", real_send)  # no more calls arriving
    assert recorder.flush(timeout=10) is True  # a flush (shutdown, tests) sends until nothing is left
    assert recorder.stats().held == 0
    assert stream.xlen(STREAM) == 10 + 3


def test_the_stream_is_trimmed_approximately_to_its_bound(outcomes, stream):
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, STREAM_MAXLEN=100, BATCH_SIZE=500)
    for n in range(1000):
        recorder.record(make_event(n))

    assert recorder.flush(timeout=10) is True

    # MAXLEN ~ trims whole stream nodes: at least the bound stays, far fewer than were added.
    assert 100 <= stream.xlen(STREAM) < 1000
    assert recorder.stats().sent == 1000


def test_submit_pushes_now_and_raises_when_redis_is_unreachable(outcomes, stream, settings):
    events = [make_event(n) for n in range(3)]

    recorder.submit(events)

    assert stream_payloads(stream) == [event.to_json() for event in events]
    settings.REDIS_URL = dead_redis_url()
    with pytest.raises(recorder.BufferUnavailable):
        submitted = make_event(9)
        recorder.submit([submitted])
    assert recorder.stats().sent == 3


# --- Bounded buffer and failures ------------------------------------------------------------------------------


def test_full_buffer_drops_the_oldest_and_counts_them(outcomes, stream, redis_url, settings):
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, LOCAL_BUFFER_MAX=100)
    settings.REDIS_URL = dead_redis_url()
    events = [make_event(n) for n in range(150)]
    for event in events:
        recorder.record(event)
    assert recorder.flush(timeout=5) is False
    assert recorder.stats() == recorder.RecorderStats(recorded=150, sent=0, dropped=50, held=100, paused=True)

    settings.REDIS_URL = redis_url
    assert recorder.flush(timeout=10) is True

    assert stream_payloads(stream) == [event.to_json() for event in events[50:]]
    assert recorder.stats() == recorder.RecorderStats(recorded=150, sent=100, dropped=50, held=0, paused=False)


def test_record_never_raises(outcomes, stream, settings):
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS)
    recorder.record(None)  # type: ignore[arg-type]
    recorder.record(make_event(1, latency_ms=object()))  # cannot be encoded
    good = make_event(2)
    recorder.record(good)
    assert recorder.flush(timeout=10) is True
    assert stream_payloads(stream) == [good.to_json()]
    assert recorder.stats().dropped == 2

    settings.REDIS_URL = dead_redis_url()
    recorder.record(make_event(3))
    assert recorder.flush(timeout=5) is False

    settings.OUTCOMES = {}  # settings the recorder cannot read: the event is lost, and counted
    recorder.record(make_event(4))
    assert (recorder.stats().recorded, recorder.stats().dropped) == (4, 3)


def test_disabled_recording_sends_nothing_of_the_servers_own_calls(outcomes, stream):
    outcomes(ENABLED=False)
    recorder.record(make_event(1))

    assert recorder.flush(timeout=5) is True
    assert stream.xlen(STREAM) == 0
    assert recorder.stats() == recorder.RecorderStats(recorded=0, sent=0, dropped=0, held=0, paused=False)

    reported = make_event(2)  # a reporter's explicit batch (REST API) is still stored
    recorder.submit([reported])
    assert stream_payloads(stream) == [reported.to_json()]


def test_redis_down_and_back(outcomes, settings, tmp_path, caplog):
    """Kill the buffer's Redis: one warning, events held (bounded), then all held ones arrive when it is back."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    outcomes(LOCAL_BUFFER_MAX=100)
    with throwaway_redis(tmp_path) as server:
        settings.REDIS_URL = server.url.replace("redis://", "redis://:hunter2@")
        server_password_free = server.url
        before = [make_event(n) for n in range(30)]
        for event in before:
            recorder.record(event)
        wait_for(lambda: recorder.stats().sent == 30, what="the first events to be sent")

        server.kill()
        during = [make_event(100 + n) for n in range(150)]
        recorder.record(during[0])
        wait_for(lambda: recorder.stats().paused, what="the recorder to notice Redis is gone")
        for event in during[1:]:
            recorder.record(event)
        assert recorder.flush(timeout=5) is False
        assert recorder.flush(timeout=5) is False
        stats = recorder.stats()
        assert (stats.held, stats.dropped, stats.paused) == (100, 50, True)

        warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        message = warnings[0].getMessage()
        assert message.startswith(f"Outcome recording paused: Redis at 127.0.0.1:{server.port} unreachable")
        assert "holding up to 100 events in memory, dropping the oldest beyond that" in message
        assert "hunter2" not in caplog.text

        server.start()  # same port, empty
        wait_for(lambda: not recorder.stats().paused, what="the flusher to resume")
        assert recorder.flush(timeout=10) is True

        client = redis.Redis.from_url(server_password_free)
        try:
            arrived = stream_payloads(client)
        finally:
            client.close()
    # Only events held at the moment it went down and after are in the new server's stream, oldest dropped.
    expected = [event.to_json() for event in during]
    assert len(arrived) == 100
    assert arrived == [payload for payload in expected if payload in set(arrived)]  # in order
    assert arrived[-1] == expected[-1]
    assert recorder.stats() == recorder.RecorderStats(recorded=180, sent=130, dropped=50, held=0, paused=False)
    resumed = [r.getMessage() for r in caplog.records if r.name == LOGGER and "resumed" in r.getMessage()]
    assert resumed == [f"Outcome recording resumed (Redis at 127.0.0.1:{server.port}); 50 events could not be "
                       "recorded (dropped)"]  # fmt: skip
    assert "hunter2" not in caplog.text


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_starts_its_own_flusher_and_leaves_the_parents_events(outcomes, stream):
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS)
    parent_event, child_event = make_event(1), make_event(2)
    recorder.record(parent_event)  # held by the parent, its flusher thread running

    pid = os.fork()
    if pid == 0:  # the child: record, send, report through the exit code, never return into pytest
        try:
            recorder.record(child_event)
            stats = recorder.stats()
            ok = recorder.flush(timeout=5) and stats.recorded == 1 and stats.held == 1
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert stream_payloads(stream) == [child_event.to_json()]
    assert recorder.flush(timeout=10) is True
    assert stream_payloads(stream) == [child_event.to_json(), parent_event.to_json()]


# --- Without Redis: Celery's filesystem broker ------------------------------------------------------------------


def test_without_redis_batches_are_spooled_and_a_drain_is_asked_for(outcomes, settings, tmp_path):
    """Celery's filesystem broker deletes a message when a worker reads it, so batches wait in spool files."""
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, BATCH_SIZE=2, SPOOL_DIR=str(tmp_path / "spool"))
    settings.REDIS_URL = ""
    events = [make_event(n) for n in range(3)]
    with celery_filesystem_broker(tmp_path / "queue") as app:
        for event in events:
            recorder.record(event)
        assert recorder.flush(timeout=10) is True
        submitted = make_event(9)
        recorder.submit([submitted])

        messages = read_task_messages(app)

    assert spooled_batches(tmp_path / "spool") == [
        [events[0].to_wire(), events[1].to_wire()],
        [events[2].to_wire()],
        [submitted.to_wire()],
    ]
    # One drain stores every batch waiting: one request for the flush's two batches, one for the submitted batch.
    assert messages == [("errcatalog.drain_outcomes", [])] * 2
    assert recorder.stats() == recorder.RecorderStats(recorded=3, sent=4, dropped=0, held=0, paused=False)


def test_the_flusher_asks_for_a_drain_at_most_once_per_interval_and_always_after_the_last_batch(
    outcomes, settings, tmp_path, monkeypatch
):
    """A Celery message per spooled batch was a busy endpoint's largest cost after the call itself."""
    monkeypatch.setattr(recorder, "DRAIN_REQUEST_SECONDS", 0.5)
    outcomes(FLUSH_INTERVAL_MS=10, BATCH_SIZE=1, SPOOL_DIR=str(tmp_path / "spool"))
    settings.REDIS_URL = ""
    events = [make_event(n) for n in range(30)]
    with celery_filesystem_broker(tmp_path / "queue") as app:
        started = time.monotonic()
        for event in events:  # a batch file every flush, over about 0.6 s
            recorder.record(event)
            time.sleep(0.02)
        wait_for(lambda: recorder.stats().sent == len(events), what="every event spooled")
        # The request owed for the last batches goes by itself, with nothing more recorded.
        wait_for(lambda: not recorder._recorder._drain_owed, what="the drain asked for after the last batch")
        elapsed = time.monotonic() - started
        messages = read_task_messages(app)

    assert len(spooled_batches(tmp_path / "spool")) > 10
    assert messages, "no drain was asked for"
    assert messages == [("errcatalog.drain_outcomes", [])] * len(messages)
    assert len(messages) <= elapsed / 0.5 + 1, (len(messages), elapsed)


def test_a_server_start_asks_for_a_drain_when_batches_go_to_the_spool(outcomes, settings, tmp_path):
    # Celery's first message imports its sending side (about 80 ms holding the GIL): at start, not under the
    # first calls; and what a previous process left in the spool is stored at once.
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, SPOOL_DIR=str(tmp_path / "spool"))
    settings.REDIS_URL = ""
    with celery_filesystem_broker(tmp_path / "queue") as app:
        recorder.prepare()
        messages = read_task_messages(app)
    assert messages == [("errcatalog.drain_outcomes", [])]
    assert recorder.stats() == recorder.RecorderStats(recorded=0, sent=0, dropped=0, held=0, paused=False)


def test_a_server_start_sends_nothing_when_batches_go_to_redis(outcomes, stream, tmp_path):
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, SPOOL_DIR=str(tmp_path / "spool"))
    with celery_filesystem_broker(tmp_path / "queue") as app:
        recorder.prepare()
        assert read_task_messages(app) == []


def test_an_unwritable_spool_keeps_the_events_held(outcomes, settings, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, SPOOL_DIR=str(blocker / "spool"))
    settings.REDIS_URL = ""
    with celery_filesystem_broker(tmp_path / "queue"):
        recorder.record(make_event(1))
        assert recorder.flush(timeout=10) is False
        assert recorder.stats() == recorder.RecorderStats(recorded=1, sent=0, dropped=0, held=1, paused=True)
        with pytest.raises(recorder.BufferUnavailable):
            recorder.submit([make_event(2)])


def test_without_redis_or_spool_batches_travel_as_celery_tasks(outcomes, settings, tmp_path):
    """Another broker (AMQP, say) gives a dead worker's message back itself: the batch rides in the task."""
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS, BATCH_SIZE=2, SPOOL_DIR="")
    settings.REDIS_URL = ""
    events = [make_event(n) for n in range(3)]
    with celery_filesystem_broker(tmp_path / "queue") as app:
        for event in events:
            recorder.record(event)
        assert recorder.flush(timeout=10) is True

        messages = read_task_messages(app)

    # The filesystem broker reads its message files in name order, which is not the order of sending when two are
    # written within the same moment: compared in the order of their first event.
    assert sorted(messages, key=lambda message: message[1][0][0]["id"]) == [
        ("errcatalog.ingest_outcomes", [[events[0].to_wire(), events[1].to_wire()]]),
        ("errcatalog.ingest_outcomes", [[events[2].to_wire()]]),
    ]


def spooled_batches(folder) -> list[list[dict]]:
    return [json.loads(path.read_bytes()) for path in sorted(folder.glob("*.batch.json"))]


# --- The MCP pipeline records every call ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_mcp_tool_calls_produce_outcome_events(outcomes, stream, settings, short_lived_connections):
    import json

    from django.core.cache import cache

    from errcatalog.catalog.defaults import catalog_load_defaults
    from errcatalog.catalog.snapshot import catalog_changed
    from mcpserver.auth import ClientIdentity
    from mcpserver.calls import ToolCall
    from mcpserver.pipeline import call_tool

    cache.clear()
    catalog_load_defaults(reset=False)
    catalog_changed()
    outcomes(FLUSH_INTERVAL_MS=NEVER_MS)
    settings.MCP = {**settings.MCP, "TOOLSETS": frozenset({RECORDER_TOOLSET})}
    client = ClientIdentity(key="token:42", name="tests")

    async def call(name: str):
        return await call_tool(
            ToolCall(name=name, arguments={}, client=client, session_id="sess-1", protocol_version="2025-11-25")
        )

    async def calls():
        return [await call(name) for name in ("recorder_hello", "recorder_upstream_broken", "recorder_helo")]

    results = asyncio.run(calls())
    assert [bool(result.is_error) for result in results] == [False, True, True]
    assert recorder.flush(timeout=10) is True

    events = [json.loads(payload) for payload in stream_payloads(stream)]
    summary = [(e["tool"], e["outcome"], e.get("code"), e["client"], e["session"]) for e in events]
    assert summary == [
        ("recorder_hello", "ok", None, "token:42", "sess-1"),
        ("recorder_upstream_broken", "error", "SERVER_ERROR", "token:42", "sess-1"),
        ("recorder_helo", "error", "FUNCTION_NOT_FOUND", "token:42", "sess-1"),
    ]
    assert all(e["latency_ms"] >= 0 and len(e["id"]) == 32 for e in events)
    assert "variant" in events[1]

"""A real Celery worker process ingests real events from the buffer (the Redis stream, or the spool folder on
Celery's filesystem broker) into the test database, and loses none when it is killed."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
import redis
from django.conf import settings

from errcatalog.outcomes import ingest, recorder
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.models import Episode, OutcomeRecord
from errcatalog.outcomes.spool import spool_size
from errcatalog.outcomes.tasks import drain_outcomes
from tests.support.celery import buffered, celery_app_on, unacknowledged
from tests.support.processes import CeleryWorkerProcess
from tests.support.recorder import celery_filesystem_broker
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def xadd(redis_url: str, events: list[OutcomeEvent], *, raw: list[bytes] = ()) -> None:
    """Append events in the wire format the recorder uses (plus optional raw payloads)."""
    client = redis.Redis.from_url(redis_url)
    outcomes = settings.OUTCOMES
    with client.pipeline(transaction=False) as pipe:
        for payload in [event.to_json() for event in events] + list(raw):
            pipe.xadd(outcomes["STREAM_KEY"], {"e": payload}, maxlen=outcomes["STREAM_MAXLEN"], approximate=True)
        pipe.execute()
    client.close()


def stream_length(redis_url: str) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        return buffered(client)
    finally:
        client.close()


def pending_count(redis_url: str) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        return unacknowledged(client)
    finally:
        client.close()


class StreamBuffer:
    """Redis: the recorder's stream, drained by ``drain_outcomes`` through the consumer group."""

    name = "redis"

    def __init__(self, redis_url: str, worker, settings) -> None:
        self.redis_url = redis_url
        self.worker_env: dict[str, str] = {}
        settings.REDIS_URL = redis_url

    @contextlib.contextmanager
    def broker(self):
        with celery_app_on(self.redis_url, {}):
            yield

    def waiting(self) -> int:
        return stream_length(self.redis_url)

    def taken_by_dead_worker(self) -> bool:
        # Taken and unacknowledged: the batch in the transaction (of one partition).
        return pending_count(self.redis_url) > 0

    def settled(self) -> bool:
        return pending_count(self.redis_url) == 0


class SpoolBuffer:
    """The embedded setup: Celery's filesystem broker, batches spooled as files in the worker's data folder."""

    name = "filesystem"

    def __init__(self, redis_url: str, worker, settings) -> None:
        self.data_dir = Path(worker.env["ERRCATALOG_DATA_DIR"])
        self.worker_env = {"REDIS_URL": "", "CELERY_BROKER_URL": "filesystem://"}
        self.spool = self.data_dir / "outcomes" / "spool"  # what config/settings.py gives the worker
        settings.REDIS_URL = ""
        settings.OUTCOMES = {**settings.OUTCOMES, "SPOOL_DIR": str(self.spool)}

    @contextlib.contextmanager
    def broker(self):
        celery = self.data_dir / "celery"
        with celery_filesystem_broker(celery / "queue", control_folder=celery / "control"):
            yield

    def waiting(self) -> int:
        return spool_size(self.spool)

    def taken_by_dead_worker(self) -> bool:
        return True  # a dead drainer takes nothing away: its batch file is still in the folder

    def settled(self) -> bool:
        return not any(self.spool.glob(".pending-*")) and not (self.spool / "rejected").exists()


@pytest.fixture(params=[StreamBuffer, SpoolBuffer], ids=lambda kind: kind.name)
def buffer(request, redis_url, celery_worker_process, settings):
    """The outcome buffer as the web process fills it and a worker drains it, once per broker."""
    made = request.param(redis_url, celery_worker_process, settings)
    with made.broker():
        yield made


@pytest.fixture
def recording(settings):
    """The recorder of this process on, sending only when the test flushes it."""
    recorder.reset()
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": True, "FLUSH_INTERVAL_MS": 600_000}
    yield
    recorder.reset()


def send(events: list[OutcomeEvent], *, batch_size: int, settings) -> None:
    """Events through this process's recorder into the buffer, ``batch_size`` per batch, as a web process does."""
    settings.OUTCOMES = {**settings.OUTCOMES, "BATCH_SIZE": batch_size}
    for event in events:
        recorder.record(event)
    assert recorder.flush(timeout=30) is True
    assert recorder.stats().sent == len(events)


def drain_until_empty(buffer, *, seconds: float = 60.0) -> None:
    """Send ``drain_outcomes`` (as beat would, about once a second) until the buffer is empty."""
    deadline = time.monotonic() + seconds
    while buffer.waiting():
        if time.monotonic() > deadline:
            raise AssertionError("the worker did not empty the outcome buffer")
        drain_outcomes.delay()
        time.sleep(1.0)


def retry_story(client: str, start: float) -> list[OutcomeEvent]:
    """Per client: an error recovered at attempt 2, an episode exhausted as the question protocol says (an error
    and three failed retries), then a plain success."""
    error = {"outcome": "error", "code": "E_UPSTREAM", "variant": "v1"}
    return [
        OutcomeEvent(tool="search", client=client, ts=start, **error),
        OutcomeEvent(tool="search", client=client, ts=start + 1, **error),
        OutcomeEvent(tool="search", client=client, ts=start + 2, outcome="ok"),
        *[OutcomeEvent(tool="fetch", client=client, ts=start + 3 + n, **error) for n in range(4)],
        OutcomeEvent(tool="list", client=client, ts=start + 9, outcome="ok"),
    ]


def expected_endings(clients: int) -> dict[str, int]:
    return {"recovered": clients, "exhausted": clients}


def endings() -> dict[str, int]:
    found: dict[str, int] = {}
    for ending in Episode.objects.values_list("ending", flat=True):
        found[ending] = found.get(ending, 0) + 1
    return found


def test_worker_stores_streamed_events_and_links_retries(
    celery_worker_process, celery_redis_app, worker_database, redis_url
):
    start = time.time() - 60
    events = [event for n in range(20) for event in retry_story(f"token:{n}", start + n)]
    xadd(redis_url, events, raw=[b"{not json", b'{"id": "x"}'])
    celery_worker_process.start()

    drain_outcomes.delay()
    wait_until(lambda: stream_length(redis_url) == 0, what="the stream to be drained")

    worker_database.pull()
    assert OutcomeRecord.objects.count() == len(events)
    assert set(OutcomeRecord.objects.values_list("id", flat=True)) == {_uuid(event.id) for event in events}
    assert endings() == expected_endings(20)
    recovered = Episode.objects.filter(ending="recovered")
    assert set(recovered.values_list("recovered_at_attempt", "retries", "code")) == {(2, 2, "E_UPSTREAM")}
    assert set(Episode.objects.filter(ending="exhausted").values_list("retries", flat=True)) == {3}
    assert sorted(OutcomeRecord.objects.filter(tool="fetch", client="token:3").values_list("attempt", flat=True)) == [
        0,
        1,
        2,
        3,
    ]
    assert not OutcomeRecord.objects.filter(tool="list", episode__isnull=False).exists()
    assert pending_count(redis_url) == 0


def test_worker_killed_mid_batch_loses_nothing_and_counts_nothing_twice(
    buffer, recording, celery_worker_process, worker_database, settings
):
    """SIGKILL inside the ingest transaction, on both brokers: every event is counted exactly once in the end.

    (Before the spool, the filesystem broker lost the killed worker's batch: its task message was deleted when
    the worker read it.)
    """
    start = time.time() - 60
    events = [event for n in range(12) for event in retry_story(f"token:{n}", start + n)]  # 96 events
    # One second: the dead worker's lock and unacknowledged batch can be taken over a second after it died.
    takeover = {"ERRCATALOG_OUTCOMES_BATCH": "40", "ERRCATALOG_OUTCOMES_CLAIM_IDLE_SECONDS": "1"}
    worker = celery_worker_process.start(**buffer.worker_env, **takeover)

    with worker_database.hold_write_lock():
        send(events, batch_size=40, settings=settings)  # three batches: 40, 40, 16
        drain_outcomes.delay()
        # The worker has taken its first batch and sits inside its transaction, unable to insert: kill it there.
        wait_until(lambda: worker_database.writers_waiting() >= 1, what="the worker to block inside its transaction")
        wait_until(buffer.taken_by_dead_worker, what="the worker to take a batch")
        worker.kill()

    worker_database.pull()
    assert OutcomeRecord.objects.count() == 0

    worker.start(**buffer.worker_env, **takeover)
    drain_until_empty(buffer)

    worker_database.pull()
    stored_ids = list(OutcomeRecord.objects.values_list("id", flat=True))
    assert len(stored_ids) == len(set(stored_ids)) == len(events)
    assert set(stored_ids) == {_uuid(event.id) for event in events}
    assert endings() == expected_endings(12)
    assert Episode.objects.count() == 24
    assert OutcomeRecord.objects.filter(episode__isnull=False).count() == 12 * 7
    assert buffer.settled()


def _uuid(hex_id: str):
    import uuid

    return uuid.UUID(hex_id)


def test_two_workers_drain_different_partitions_at_once_and_one_killed_loses_nothing(
    recording, celery_worker_process, celery_redis_app, worker_database, redis_url, settings, tmp_path
):
    """Two workers inside their ingest transactions at the same time (different partitions); one is SIGKILLed
    there: the survivor stores the rest, takes the dead one's partition over once its lock expires, and every
    event is counted exactly once."""
    settings.REDIS_URL = redis_url
    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 4}
    start = time.time() - 60
    events = [event for n in range(12) for event in retry_story(f"token:{n}", start + n)]  # 96 events
    takeover = {"ERRCATALOG_OUTCOMES_BATCH": "10", "ERRCATALOG_OUTCOMES_CLAIM_IDLE_SECONDS": "1"}
    first = celery_worker_process.start(**takeover)
    (tmp_path / "second").mkdir()
    second = CeleryWorkerProcess(celery_worker_process.env, tmp_path / "second").start(**takeover)
    try:
        with worker_database.hold_write_lock():
            send(events, batch_size=96, settings=settings)
            assert len(backlog_by_partition(redis_url)) == 4
            drain_outcomes.delay()
            drain_outcomes.delay()
            # One drainer per partition: two workers wait inside their transactions at once (one lock, before
            # partitions, let the second drainer do nothing at all). SQLite cannot say who waits for its lock: there,
            # two workers each holding a partition's drainer lock.
            wait_until(
                lambda: (
                    worker_database.writers_waiting() >= 2
                    if worker_database.vendor == "postgresql"
                    else len(drainers(redis_url, settings.OUTCOMES["STREAM_KEY"])) >= 2
                ),
                what="both workers to be draining",
            )
            first.kill()
        drain_until_empty(StreamBuffer(redis_url, celery_worker_process, settings))
    finally:
        second.stop()

    worker_database.pull()
    stored_ids = list(OutcomeRecord.objects.values_list("id", flat=True))
    assert len(stored_ids) == len(set(stored_ids)) == len(events)
    assert set(stored_ids) == {_uuid(event.id) for event in events}
    assert endings() == expected_endings(12)
    assert OutcomeRecord.objects.filter(episode__isnull=False).count() == 12 * 7
    assert pending_count(redis_url) == 0


def drainers(redis_url: str, stream_key: str) -> set[bytes]:
    """The workers holding a partition's drainer lock now (``ingest``'s ``<stream>:drainer`` keys)."""
    client = redis.Redis.from_url(redis_url)
    try:
        return {client.get(key) for key in client.scan_iter(match=f"{stream_key}*:drainer")} - {None}
    finally:
        client.close()


def backlog_by_partition(redis_url: str) -> dict[str, int]:
    client = redis.Redis.from_url(redis_url)
    try:
        return ingest.backlog(client)
    finally:
        client.close()

"""A real Celery worker process ingests real events from the real Redis stream into the test database."""

from __future__ import annotations

import time

import pytest
import redis
from django.conf import settings

from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.models import Episode
from errcatalog.outcomes.models import OutcomeEvent as OutcomeEventRow
from errcatalog.tasks import drain_outcomes
from tests.errcatalog.outcomes.conftest import wait_until

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
        return client.xlen(settings.OUTCOMES["STREAM_KEY"])
    finally:
        client.close()


def pending_count(redis_url: str) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        return client.xpending(settings.OUTCOMES["STREAM_KEY"], settings.OUTCOMES["STREAM_GROUP"])["pending"]
    except redis.ResponseError:  # no group yet
        return 0
    finally:
        client.close()


def drain_until_empty(redis_url: str, *, seconds: float = 60.0) -> None:
    """Send ``drain_outcomes`` (as beat would, about once a second) until the stream is empty."""
    deadline = time.monotonic() + seconds
    while stream_length(redis_url):
        if time.monotonic() > deadline:
            raise AssertionError("the worker did not empty the outcome stream")
        drain_outcomes.delay()
        time.sleep(1.0)


def retry_story(client: str, start: float) -> list[OutcomeEvent]:
    """Per client: an error recovered at attempt 2, an exhausted episode, then a plain success."""
    error = {"outcome": "error", "code": "E_UPSTREAM", "variant": "v1"}
    return [
        OutcomeEvent(tool="search", client=client, ts=start, **error),
        OutcomeEvent(tool="search", client=client, ts=start + 1, **error),
        OutcomeEvent(tool="search", client=client, ts=start + 2, outcome="ok"),
        *[OutcomeEvent(tool="fetch", client=client, ts=start + 3 + n, **error) for n in range(5)],
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
    assert OutcomeEventRow.objects.count() == len(events)
    assert set(OutcomeEventRow.objects.values_list("id", flat=True)) == {_uuid(event.id) for event in events}
    assert endings() == expected_endings(20)
    recovered = Episode.objects.filter(ending="recovered")
    assert set(recovered.values_list("recovered_at_attempt", "retries", "code")) == {(2, 2, "E_UPSTREAM")}
    assert set(Episode.objects.filter(ending="exhausted").values_list("retries", flat=True)) == {4}
    assert sorted(OutcomeEventRow.objects.filter(tool="fetch", client="token:3").values_list("attempt", flat=True)) == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert not OutcomeEventRow.objects.filter(tool="list", episode__isnull=False).exists()
    assert pending_count(redis_url) == 0


def test_worker_killed_mid_batch_loses_nothing_and_counts_nothing_twice(
    celery_worker_process, celery_redis_app, worker_database, redis_url
):
    start = time.time() - 60
    events = [event for n in range(12) for event in retry_story(f"token:{n}", start + n)]  # 108 events
    xadd(redis_url, events)
    # One second: the dead worker's lock and unacknowledged batch can be taken over a second after it died.
    takeover = {"ERRCATALOG_OUTCOMES_BATCH": "40", "ERRCATALOG_OUTCOMES_CLAIM_IDLE_SECONDS": "1"}
    worker = celery_worker_process.start(**takeover)

    with worker_database.hold_write_lock():
        drain_outcomes.delay()
        # The worker has read its first batch and sits inside its transaction, unable to insert: kill it there.
        wait_until(lambda: pending_count(redis_url) >= 40, what="the worker to take a batch")
        wait_until(lambda: worker_database.writers_waiting() >= 1, what="the worker to block inside its transaction")
        worker.kill()

    worker_database.pull()
    assert OutcomeEventRow.objects.count() == 0
    # Taken and unacknowledged: the batch in the transaction, and the next one if it was read ahead already.
    assert pending_count(redis_url) in (40, 80)

    worker.start(**takeover)
    drain_until_empty(redis_url)

    worker_database.pull()
    stored_ids = list(OutcomeEventRow.objects.values_list("id", flat=True))
    assert len(stored_ids) == len(set(stored_ids)) == len(events)
    assert set(stored_ids) == {_uuid(event.id) for event in events}
    assert endings() == expected_endings(12)
    assert Episode.objects.count() == 24
    assert OutcomeEventRow.objects.filter(episode__isnull=False).count() == 12 * 8
    assert pending_count(redis_url) == 0


def _uuid(hex_id: str):
    import uuid

    return uuid.UUID(hex_id)

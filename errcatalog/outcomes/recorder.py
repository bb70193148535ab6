"""Request-path side of outcome recording (stub: a helper implements it).

Interface (fixed):
- ``record(event: OutcomeEvent) -> None``: called once per tool call on the request path. O(1), never raises,
  never blocks on I/O. Appends to a bounded in-process buffer; a background flusher sends batches to the
  Redis stream (``REDIS_URL`` set) or, without Redis, as ``errcatalog.ingest_outcomes`` Celery tasks.
- ``submit(events: Sequence[OutcomeEvent]) -> None``: durable push now, for the REST batch endpoint. Raises
  ``BufferUnavailable`` when the buffer cannot take them (the API answers 503 then).
- ``flush(timeout: float = 5.0) -> bool``: push everything held now (shutdown, tests); True when all went.
- ``stats() -> RecorderStats``: counters for people and tests (recorded, sent, dropped, held, unavailable).
"""

from __future__ import annotations

from collections.abc import Sequence

from errcatalog.outcomes.events import OutcomeEvent


class BufferUnavailable(RuntimeError):
    """The outcome buffer (Redis, or the Celery broker) cannot take events right now."""


def record(event: OutcomeEvent) -> None:
    """Queue one event for recording; never raises."""


def submit(events: Sequence[OutcomeEvent]) -> None:
    raise BufferUnavailable("outcome recording is not implemented yet")


def flush(timeout: float = 5.0) -> bool:
    return True

"""Worker side of outcome recording (stub: a helper implements it).

Interface (fixed):
- ``drain() -> int``: read the Redis stream through the consumer group in batches, store, acknowledge after
  commit; take over batches a dead worker left unacknowledged. One drainer at a time. Returns new events stored.
- ``ingest_wire_batch(events: list[dict]) -> int``: check each with ``events.from_wire`` (bad ones are counted
  and logged, never stored), then ``ingest_events``.
- ``ingest_events(events: Sequence[OutcomeEvent], *, source: str = "mcp") -> int``: one transaction: insert the
  events not stored yet (by ID), link the new ones into episodes in time order, note changed rollup buckets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from errcatalog.outcomes.events import OutcomeEvent


def drain() -> int:
    return 0


def ingest_wire_batch(events: list[dict[str, Any]]) -> int:
    return 0


def ingest_events(events: Sequence[OutcomeEvent], *, source: str = "mcp") -> int:
    return 0

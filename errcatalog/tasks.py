"""Celery tasks: thin wrappers around ``errcatalog.outcomes``. The beat schedule is in settings."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from errcatalog.outcomes import episodes, ingest, rollups


@shared_task(name="errcatalog.drain_outcomes")
def drain_outcomes() -> int:
    """Ingest what waits in the Redis buffer; returns the number of new events stored."""
    return ingest.drain()


@shared_task(name="errcatalog.ingest_outcomes")
def ingest_outcomes(events: list[dict[str, Any]]) -> int:
    """Ingest a batch sent as a task (the embedded setup without Redis); returns the number of new events."""
    return ingest.ingest_wire_batch(events)


@shared_task(name="errcatalog.close_abandoned_episodes")
def close_abandoned_episodes() -> int:
    """End episodes whose retry window passed without a success; returns how many were closed."""
    return episodes.close_abandoned()


@shared_task(name="errcatalog.compute_rollups")
def compute_rollups() -> int:
    """Recompute the buckets that changed since the last run; returns how many buckets were written."""
    return rollups.compute_due()

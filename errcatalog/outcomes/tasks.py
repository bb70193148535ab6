"""Celery tasks: thin wrappers around ``errcatalog.outcomes``. The beat schedule is in settings.

The task names are stable: beat's schedule (settings) and the recorder (which sends its batches by name, being
below this module) name them, and a test checks that what the recorder sends is registered here.

Every task states its delivery and retry policy here:

- ``acks_late`` and ``reject_on_worker_lost``: a task is acknowledged after it ran and given back when its worker
  dies, on brokers that can (Redis, AMQP). Every task is safe to run twice: ingest stores each event ID once, and
  the periodic tasks recompute or close what is due. On Celery's filesystem broker a read message is gone, which
  is why outcome batches wait in the spool folder there (``outcomes.spool``), not inside a task.
- ``autoretry_for=TRANSIENT_ERRORS`` (``errcatalog.dependencies``): the database or Redis restarting, or a
  connection cut by a failover, is retried with exponential backoff (``retry_backoff`` seconds doubling up to
  ``retry_backoff_max``, each delay drawn at random below that bound by ``retry_jitter`` so a fleet of workers does
  not retry in step), at most ``max_retries`` times. Any other exception fails the task at once.
- A failure reaches Sentry (sentry-sdk's Celery integration, with a ``task`` tag: ``config/celery.py``) only when
  the task fails for good: a retry is control flow, not an error. So an outage shorter than the retries leaves
  no Sentry event, and a longer one leaves one per task that gave up.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

# The policy every task of errcatalog shares (see above), kept with the errors it retries, below every domain.
from errcatalog.dependencies import DELIVERY
from errcatalog.outcomes import ingest, rollups
from errcatalog.outcomes.episode_store import episode_close_abandoned


# Beat sends this every second, and the recorder after each spooled batch: retries only bridge a short outage
# (1 + 2 + 4 s at most); past that the next tick tries again anyway.
@shared_task(
    name="errcatalog.drain_outcomes",
    **DELIVERY,
    retry_backoff=1,
    retry_backoff_max=4,
    max_retries=3,
)
def drain_outcomes() -> int:
    """Ingest what waits in the buffer (Redis stream or spool folder); returns the number of new events stored."""
    return ingest.drain()


# The batch lives only in this message (a broker other than Redis or the filesystem one, without Redis): retry
# for longer, up to about 18 minutes in all (2 + 4 + ... + 300 s, capped), before the events are given up.
@shared_task(
    name="errcatalog.ingest_outcomes",
    **DELIVERY,
    retry_backoff=2,
    retry_backoff_max=300,
    max_retries=10,
)
def ingest_outcomes(events: list[dict[str, Any]]) -> int:
    """Ingest a batch sent as a task (no Redis, on a broker other than the filesystem one); returns new events."""
    return ingest.ingest_wire_batch(events)


# Beat sends the two below every 30 s and each run does all that is due: a few quick retries are enough.
@shared_task(
    name="errcatalog.close_abandoned_episodes",
    **DELIVERY,
    retry_backoff=1,
    retry_backoff_max=8,
    max_retries=3,
)
def close_abandoned_episodes() -> int:
    """End episodes whose retry window passed without a success; returns how many were closed."""
    return episode_close_abandoned()


@shared_task(
    name="errcatalog.compute_rollups",
    **DELIVERY,
    retry_backoff=1,
    retry_backoff_max=8,
    max_retries=3,
)
def compute_rollups() -> int:
    """Recompute the buckets that changed since the last run; returns how many buckets were written."""
    return rollups.compute_due()

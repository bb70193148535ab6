"""Retry episodes in the database: the edge around the pure rules of ``episodes``.

- ``episode_link_events(*, events) -> list[Link]``: load the open episodes of the events' callers (locked), let
  ``episodes.correlate`` decide, write the episodes it opened or changed. Runs inside the ingest transaction.
- ``episode_close_abandoned(*, now=None) -> int``: the periodic clean-up, ``episodes.abandon_expired``'s rule as
  one UPDATE.

The database is the one source of truth every process and worker shares; on PostgreSQL the writes are one
statement each over column arrays (``bulk_sql``), elsewhere Django's bulk operations. Imports ``episodes``,
``bulk_sql``, ``events`` and ``models``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import F
from django.utils import timezone

from errcatalog.outcomes.bulk_sql import server_side_cursor, text_array
from errcatalog.outcomes.episodes import (
    ABANDONED,
    OPEN,
    EpisodeState,
    Key,
    Link,
    correlate,
    event_key,
)
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.models import Episode


def episode_link_events(*, events: Sequence[OutcomeEvent]) -> list[Link]:
    """Correlate newly stored events against the open episodes in the database and store the result.

    Must run inside the ingest transaction; the caller writes each link's episode ID and attempt onto the event
    rows. Open episodes are locked (``FOR UPDATE`` on PostgreSQL) so that nothing else ends them while
    this batch decides about them (only the batch's own keys: ingests of other keys never wait for them).
    """
    open_episodes = _load_open({event_key(event) for event in events})
    links, touched = correlate(
        open_episodes,
        events,
        window=settings.OUTCOMES["RETRY_WINDOW_SECONDS"],
        sessionless_window=settings.OUTCOMES["SESSIONLESS_RETRY_WINDOW_SECONDS"],
        max_attempts=settings.OUTCOMES["MAX_ATTEMPTS"],
    )
    _store(touched)
    return links


def episode_close_abandoned(*, now: datetime | None = None) -> int:
    """End open episodes whose window passed without another call (``abandoned``, at last call + window).

    ``episodes.abandon_expired`` in one UPDATE per window (with a session, without one): on PostgreSQL each waits
    for an ingest that holds one of the rows and re-checks it is still open. Returns how many were ended.
    """
    now = now or timezone.now()
    ended = 0
    for sessionless, seconds in (
        (False, settings.OUTCOMES["RETRY_WINDOW_SECONDS"]),
        (True, settings.OUTCOMES["SESSIONLESS_RETRY_WINDOW_SECONDS"]),
    ):
        window = timedelta(seconds=seconds)
        rows = Episode.objects.filter(ending=OPEN, last_at__lt=now - window)
        rows = rows.filter(session="") if sessionless else rows.exclude(session="")
        ended += rows.update(ending=ABANDONED, ended_at=F("last_at") + window, changed_at=now)
    return ended


# --- Loading --------------------------------------------------------------------------------------------------


def _load_open(keys: set[Key]) -> dict[Key, EpisodeState]:
    if not keys:
        return {}
    if connection.vendor == "postgresql":
        # Exactly the batch's keys, locked: ingests of other keys (other partitions) never wait for these rows.
        ordered = sorted(keys)
        with server_side_cursor() as cursor:
            cursor.execute(
                _PG_OPEN,
                [text_array([key[0] for key in ordered]), text_array([key[1] for key in ordered]),
                 text_array([key[2] for key in ordered]), OPEN],
            )  # fmt: skip
            states = [EpisodeState(**dict(zip(_OPEN_FIELDS, row, strict=True))) for row in cursor.fetchall()]
        return {state.key: state for state in states}
    # SQLite locks the whole database for a writer: filtering by tool in SQL and by the whole key here is enough.
    tools = {key[0] for key in keys}
    found: dict[Key, EpisodeState] = {}
    for row in Episode.objects.filter(ending=OPEN, tool__in=tools).order_by("pk"):
        key = (row.tool, row.client, row.session)
        if key in keys:
            found[key] = _state_of(row)
    return found


# The open episodes of the given keys (at most one each), locked in id order; the columns are these fields.
_OPEN_FIELDS = (
    "tool", "client", "session", "code", "variant", "interactive", "sentry_event_id", "started_at", "last_at",
    "upstream", "retries", "ending", "ended_at", "recovered_at_attempt", "pk",
)  # fmt: skip
_PG_OPEN = """
SELECT ep.tool, ep.client, ep.session, ep.code, ep.variant, ep.interactive, ep.sentry_event_id,
       extract(epoch FROM ep.started_at)::float8, extract(epoch FROM ep.last_at)::float8, ep.upstream, ep.retries,
       ep.ending, extract(epoch FROM ep.ended_at)::float8, ep.recovered_at_attempt, ep.id
FROM errcatalog_episode AS ep
JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k(tool, client, session)
  ON ep.tool = k.tool AND ep.client = k.client AND ep.session = k.session
WHERE ep.ending = %s
ORDER BY ep.id
FOR UPDATE OF ep
"""


def _state_of(row: Episode) -> EpisodeState:
    return EpisodeState(
        tool=row.tool,
        client=row.client,
        session=row.session,
        code=row.code,
        variant=row.variant,
        interactive=row.interactive,
        sentry_event_id=row.sentry_event_id,
        upstream=row.upstream,
        started_at=row.started_at.timestamp(),
        last_at=row.last_at.timestamp(),
        retries=row.retries,
        ending=row.ending,
        ended_at=row.ended_at.timestamp() if row.ended_at else None,
        recovered_at_attempt=row.recovered_at_attempt,
        pk=row.pk,
    )


# --- Storing --------------------------------------------------------------------------------------------------

_CHANGING_FIELDS = [
    "last_at",
    "ended_at",
    "retries",
    "recovered_at_attempt",
    "resolution_seconds",
    "ending",
    "changed_at",
]


def _store(touched: list[EpisodeState]) -> None:
    """Write changed episodes, then insert new ones: an old open episode of a key ends before its successor opens."""
    existing = [state for state in touched if state.pk is not None]
    new = [state for state in touched if state.pk is None]
    if connection.vendor == "postgresql":
        # Django's bulk_update (a CASE WHEN per row and field) and bulk_create cost more in Python than a whole
        # batch of event inserts; one statement each over column arrays does the same work.
        if existing:
            _update_postgresql(existing)
        if new:
            _insert_postgresql(new)
        return
    if existing:
        Episode.objects.bulk_update([_row_of(state) for state in existing], _CHANGING_FIELDS)
    if new:
        rows = Episode.objects.bulk_create([_row_of(state) for state in new])
        for state, row in zip(new, rows, strict=True):
            state.pk = row.pk


_PG_UPDATE = """
UPDATE errcatalog_episode AS ep
SET last_at = to_timestamp(u.last_at), ended_at = to_timestamp(u.ended_at), retries = u.retries,
    recovered_at_attempt = u.recovered_at_attempt, resolution_seconds = u.resolution_seconds, ending = u.ending,
    changed_at = now()
FROM unnest(%s::bigint[], %s::float8[], %s::float8[], %s::int[], %s::int[], %s::float8[], %s::text[])
     AS u(id, last_at, ended_at, retries, recovered_at_attempt, resolution_seconds, ending)
WHERE ep.id = u.id
"""

# Rows come back in the order of the arrays, as Django's own bulk_create relies on.
_PG_INSERT = """
INSERT INTO errcatalog_episode
    (tool, client, session, code, variant, interactive, sentry_event_id, upstream, started_at, last_at, ended_at,
     retries, recovered_at_attempt, resolution_seconds, ending, changed_at)
SELECT u.tool, u.client, u.session, u.code, u.variant, u.interactive, u.sentry_event_id, u.upstream,
       to_timestamp(u.started_at), to_timestamp(u.last_at), to_timestamp(u.ended_at), u.retries,
       u.recovered_at_attempt, u.resolution_seconds, u.ending, now()
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::bool[], %s::text[], %s::text[],
            %s::float8[], %s::float8[], %s::float8[], %s::int[], %s::int[], %s::float8[], %s::text[])
     AS u(tool, client, session, code, variant, interactive, sentry_event_id, upstream, started_at, last_at,
          ended_at, retries, recovered_at_attempt, resolution_seconds, ending)
RETURNING id
"""


def _update_postgresql(states: list[EpisodeState]) -> None:
    with server_side_cursor() as cursor:
        cursor.execute(
            _PG_UPDATE,
            [
                [state.pk for state in states],
                [state.last_at for state in states],
                [state.ended_at for state in states],
                [state.retries for state in states],
                [state.recovered_at_attempt for state in states],
                [state.resolution_seconds for state in states],
                [state.ending for state in states],
            ],
        )


def _insert_postgresql(states: list[EpisodeState]) -> None:
    with server_side_cursor() as cursor:
        cursor.execute(
            _PG_INSERT,
            [
                [state.tool for state in states],
                [state.client for state in states],
                [state.session for state in states],
                [state.code for state in states],
                [state.variant for state in states],
                [state.interactive for state in states],
                [state.sentry_event_id for state in states],
                [state.upstream for state in states],
                [state.started_at for state in states],
                [state.last_at for state in states],
                [state.ended_at for state in states],
                [state.retries for state in states],
                [state.recovered_at_attempt for state in states],
                [state.resolution_seconds for state in states],
                [state.ending for state in states],
            ],
        )
        for state, (pk,) in zip(states, cursor.fetchall(), strict=True):
            state.pk = pk


def _row_of(state: EpisodeState) -> Episode:
    return Episode(
        pk=state.pk,
        tool=state.tool,
        client=state.client,
        session=state.session,
        code=state.code,
        variant=state.variant,
        interactive=state.interactive,
        sentry_event_id=state.sentry_event_id,
        upstream=state.upstream,
        started_at=_aware(state.started_at),
        last_at=_aware(state.last_at),
        ended_at=_aware(state.ended_at) if state.ended_at is not None else None,
        retries=state.retries,
        recovered_at_attempt=state.recovered_at_attempt,
        resolution_seconds=state.resolution_seconds,
        ending=state.ending,
        changed_at=timezone.now(),
    )


def _aware(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)

"""Retry episodes: an error and the calls of the same tool by the same caller that follow it within the window.

The rules (DESIGN §7) live in ``correlate``, a pure function over plain data; ``link_new_events`` is the adapter
that loads the open episodes from the database (the one source of truth every process and worker shares),
runs the rules and writes the result back; ``close_abandoned`` is the periodic clean-up.

- The key is (tool, client, session or ""): sessions and clients never share an episode.
- An ``error`` with no open episode for its key opens one; the error is attempt 0.
- The next call of the key at most ``RETRY_WINDOW_SECONDS`` after the episode's latest call is a retry with
  attempt = retries + 1. ``ok`` ends the episode ``recovered`` at that attempt; a failed retry keeps it open
  unless it was retry number ``MAX_ATTEMPTS`` (3: seed 003's ``MAX_RETRY_ATTEMPTS``, after which a client following
  the seed stops retrying), which ends it ``exhausted``: error, then three failed retries, is the fourth failed
  call and the end. Waiting for a fifth call that a seed client never makes would leave the episode open until
  it ended ``abandoned``, and count it on the wrong side of the retry success rate.
- A call later than the window first ends the old episode ``abandoned`` (at last call + window), then counts as
  a fresh call.
- ``input_required`` (2026-07-28 elicitation: the server asked the client for input and the same call comes back
  with the answer) is neither success nor failure. It is linked to the open episode with the attempt it belongs
  to (retries + 1, the attempt in flight) and keeps the window alive, but it is not counted as a retry: the
  call that completes it carries the same attempt number and decides. Without an open episode it links nowhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import F
from django.utils import timezone

from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.models import Episode

Key = tuple[str, str, str]

OPEN = Episode.Ending.OPEN.value
RECOVERED = Episode.Ending.RECOVERED.value
EXHAUSTED = Episode.Ending.EXHAUSTED.value
ABANDONED = Episode.Ending.ABANDONED.value


@dataclass(slots=True)
class EpisodeState:
    """An episode as the rules see it: times are Unix seconds; ``pk`` is None until it is stored."""

    tool: str
    client: str
    session: str
    code: str
    variant: str
    interactive: bool
    sentry_event_id: str
    started_at: float
    last_at: float
    retries: int = 0
    ending: str = OPEN
    ended_at: float | None = None
    recovered_at_attempt: int | None = None
    pk: int | None = None

    @property
    def key(self) -> Key:
        return (self.tool, self.client, self.session)

    @property
    def resolution_seconds(self) -> float | None:
        """Seed 003's user resolution time: from the first failed call to the recovering call; None unless recovered."""
        if self.ending != RECOVERED or self.ended_at is None:
            return None
        return max(self.ended_at - self.started_at, 0.0)


@dataclass(frozen=True, slots=True)
class Link:
    """Where one call landed: its episode (None: not part of one) and its attempt number (0: not a retry)."""

    event: OutcomeEvent
    episode: EpisodeState | None
    attempt: int


def event_key(event: OutcomeEvent) -> Key:
    return (event.tool, event.client or "", event.session or "")


def correlate(
    open_episodes: dict[Key, EpisodeState],
    events: Iterable[OutcomeEvent],
    *,
    window: float,
    max_attempts: int,
) -> tuple[list[Link], list[EpisodeState]]:
    """Apply the rules to ``events`` (in the order given, which should be time order).

    ``open_episodes`` is updated in place: ended episodes leave it, opened ones join it. Returns one link per
    event and every episode that changed or was opened (each once, in first-touched order).
    """
    links: list[Link] = []
    touched: dict[int, EpisodeState] = {}
    for event in events:
        key = event_key(event)
        episode = open_episodes.get(key)
        if episode is not None and event.ts - episode.last_at > window:
            episode.ending, episode.ended_at = ABANDONED, episode.last_at + window
            touched.setdefault(id(episode), episode)
            del open_episodes[key]
            episode = None
        if episode is None:
            if event.outcome != "error":
                links.append(Link(event, None, 0))
                continue
            episode = _opened_by(event)
            open_episodes[key] = episode
            touched[id(episode)] = episode
            links.append(Link(event, episode, 0))
            continue
        touched.setdefault(id(episode), episode)
        episode.last_at = max(episode.last_at, event.ts)
        attempt = episode.retries + 1
        links.append(Link(event, episode, attempt))
        if event.outcome == "input_required":
            continue
        episode.retries = attempt
        if event.outcome == "ok":
            episode.ending, episode.ended_at, episode.recovered_at_attempt = RECOVERED, event.ts, attempt
        elif attempt >= max_attempts:
            episode.ending, episode.ended_at = EXHAUSTED, event.ts
        if episode.ending != OPEN:
            del open_episodes[key]
    return links, list(touched.values())


def _opened_by(event: OutcomeEvent) -> EpisodeState:
    return EpisodeState(
        tool=event.tool,
        client=event.client or "",
        session=event.session or "",
        code=event.code or "",
        variant=event.variant or "",
        interactive=event.interactive,
        sentry_event_id=event.sentry_event_id or "",
        started_at=event.ts,
        last_at=event.ts,
    )


# --- Database adapter ----------------------------------------------------------------------------------------


def link_new_events(events: Sequence[OutcomeEvent]) -> list[Link]:
    """Correlate newly stored events (in time order) against the open episodes in the database and store the result.

    Must run inside the ingest transaction, after the events were inserted; the caller writes each link's
    episode ID and attempt onto the event rows. Open episodes are locked (``select_for_update`` on PostgreSQL)
    so that nothing else ends them while this batch decides about them.
    """
    keys = {event_key(event) for event in events}
    open_episodes = _load_open(keys)
    links, touched = correlate(
        open_episodes,
        sorted(events, key=lambda event: event.ts),
        window=settings.OUTCOMES["RETRY_WINDOW_SECONDS"],
        max_attempts=settings.OUTCOMES["MAX_ATTEMPTS"],
    )
    _store(touched)
    return links


def _load_open(keys: set[Key]) -> dict[Key, EpisodeState]:
    if not keys:
        return {}
    tools = {key[0] for key in keys}
    found: dict[Key, EpisodeState] = {}
    # Open episodes are few; filtering by tool in SQL and by the whole key here keeps the query simple.
    rows = Episode.objects.select_for_update().filter(ending=OPEN, tool__in=tools).order_by("pk")
    for row in rows:
        key = (row.tool, row.client, row.session)
        if key in keys:
            found[key] = _state_of(row)
    return found


def _state_of(row: Episode) -> EpisodeState:
    return EpisodeState(
        tool=row.tool,
        client=row.client,
        session=row.session,
        code=row.code,
        variant=row.variant,
        interactive=row.interactive,
        sentry_event_id=row.sentry_event_id,
        started_at=row.started_at.timestamp(),
        last_at=row.last_at.timestamp(),
        retries=row.retries,
        ending=row.ending,
        ended_at=row.ended_at.timestamp() if row.ended_at else None,
        recovered_at_attempt=row.recovered_at_attempt,
        pk=row.pk,
    )


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
    (tool, client, session, code, variant, interactive, sentry_event_id, started_at, last_at, ended_at, retries,
     recovered_at_attempt, resolution_seconds, ending, changed_at)
SELECT u.tool, u.client, u.session, u.code, u.variant, u.interactive, u.sentry_event_id, to_timestamp(u.started_at),
       to_timestamp(u.last_at), to_timestamp(u.ended_at), u.retries, u.recovered_at_attempt, u.resolution_seconds,
       u.ending, now()
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::bool[], %s::text[], %s::float8[],
            %s::float8[], %s::float8[], %s::int[], %s::int[], %s::float8[], %s::text[])
     AS u(tool, client, session, code, variant, interactive, sentry_event_id, started_at, last_at, ended_at,
          retries, recovered_at_attempt, resolution_seconds, ending)
RETURNING id
"""


def _update_postgresql(states: list[EpisodeState]) -> None:
    from errcatalog.outcomes.ingest import server_side_cursor

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
    from errcatalog.outcomes.ingest import server_side_cursor

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


def close_abandoned(now: datetime | None = None) -> int:
    """End open episodes whose window passed without another call (``abandoned``, at last call + window).

    One UPDATE: on PostgreSQL it waits for an ingest that holds one of the rows and re-checks it is still open.
    """
    window = timedelta(seconds=settings.OUTCOMES["RETRY_WINDOW_SECONDS"])
    now = now or timezone.now()
    return Episode.objects.filter(ending=OPEN, last_at__lt=now - window).update(
        ending=ABANDONED, ended_at=F("last_at") + window, changed_at=now
    )

"""Retry episodes, the rules: plain data in, decisions out. No Django, no ORM, no I/O.

An episode is an error and the calls of the same tool by the same caller that follow it within the window
(DESIGN §7). ``correlate`` decides, for a batch of outcome events and the episodes still open for their callers,
which episode each event opens, extends or ends and with which attempt number; ``abandon_expired`` decides which
open episodes the window has ended. ``episode_store`` is the database edge: it loads the open episodes, calls
these functions and writes their decisions. This module imports only ``errcatalog.outcomes.events``.

- The key is (tool, client, session or ""): a retry belongs to the conversation of the error, and the MCP session
  (or the session a reporter names) is the only record of a conversation an outcome has. Sessions and clients
  never share an episode: a success in another session is never a recovery.
- Calls without a session (a 2026-07-28 request belongs to none; a report may name none) share the key of their
  client and tool, and nothing in them tells one run of a script from another. For them the window is the much
  shorter ``sessionless_window``: an agent retries within seconds of reading the error, while another run under
  the same token is as likely minutes later as seconds.
- An ``error`` with no open episode for its key opens one; the error is attempt 0.
- The next call of the key at most ``window`` seconds (``sessionless_window`` without a session) after the episode's
  latest call is a retry with
  attempt = retries + 1. ``ok`` ends the episode ``recovered`` at that attempt; a failed retry keeps it open
  unless it was retry number ``max_attempts`` (3: the question protocol's ``MAX_RETRY_ATTEMPTS``, after which a
  client following it stops retrying), which ends it ``exhausted``: error, then three failed retries, is the fourth
  failed call and the end. Waiting for a fifth call that such a client never makes would leave the episode open until
  it ended ``abandoned``, and count it on the wrong side of the retry success rate.
- A call later than the window first ends the old episode ``abandoned`` (at last call + window), then counts as
  a fresh call. With no later call, the periodic clean-up ends it the same way once the window has passed.
- ``input_required`` (2026-07-28 elicitation: the server asked the client for input and the same call comes back
  with the answer) is neither success nor failure. It is linked to the open episode with the attempt it belongs
  to (retries + 1, the attempt in flight) and keeps the window alive, but it is not counted as a retry: the
  call that completes it carries the same attempt number and decides. Without an open episode it links nowhere.
- The code, variant, interactivity and Sentry event of an episode are those of the error that opened it: its
  ending is credited to that wording.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from errcatalog.outcomes.events import OutcomeEvent

Key = tuple[str, str, str]

# How an episode ends; ``errcatalog.outcomes.models.Episode.Ending`` stores these values.
OPEN = "open"
RECOVERED = "recovered"  # a retry succeeded
EXHAUSTED = "exhausted"  # retry number max_attempts failed too
ABANDONED = "abandoned"  # the window passed without a success


@dataclass(slots=True)
class EpisodeState:
    """An episode as the rules see it: times are Unix seconds; ``pk`` is None until the edge stores it."""

    tool: str
    client: str
    session: str
    code: str
    variant: str
    interactive: bool
    sentry_event_id: str
    started_at: float
    last_at: float
    upstream: str = ""  # the opening error's upstream (the gateway); blank for our own tools
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
        """The question protocol's user resolution time: from the first failed call to the recovering call; None
        unless recovered."""
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
    """The caller an event belongs to: episodes of different keys never mix (and ingest partitions follow it)."""
    return (event.tool, event.client or "", event.session or "")


def window_of(key: Key, *, window: float, sessionless_window: float) -> float:
    """The retry window of a key: ``window`` within a session, ``sessionless_window`` without one."""
    return window if key[2] else sessionless_window


def correlate(
    open_episodes: dict[Key, EpisodeState],
    events: Iterable[OutcomeEvent],
    *,
    window: float,
    sessionless_window: float,
    max_attempts: int,
) -> tuple[list[Link], list[EpisodeState]]:
    """Apply the rules to ``events`` in time order, whatever order they come in (equal times keep theirs).

    ``open_episodes`` holds the open episodes of the events' keys and is updated in place: ended episodes leave
    it, opened ones join it. Returns one link per event (in time order) and every episode that changed or was
    opened (each once, in first-touched order): the decisions the edge stores.
    """
    links: list[Link] = []
    touched: dict[int, EpisodeState] = {}
    for event in sorted(events, key=lambda event: event.ts):
        key = event_key(event)
        limit = window_of(key, window=window, sessionless_window=sessionless_window)
        episode = open_episodes.get(key)
        if episode is not None and event.ts - episode.last_at > limit:
            _abandon(episode, window=limit)
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


def abandon_expired(
    episodes: Iterable[EpisodeState], *, now: float, window: float, sessionless_window: float
) -> list[EpisodeState]:
    """End the open episodes whose window passed before ``now`` without another call; returns those ended.

    Ended ``abandoned`` at last call + their key's window, as a late call would have ended them. ``episode_store``
    applies the same rule in UPDATEs (``episode_close_abandoned``): the whole table is too many rows to load.
    """
    expired = []
    for episode in episodes:
        limit = window_of(episode.key, window=window, sessionless_window=sessionless_window)
        if episode.ending == OPEN and episode.last_at < now - limit:
            _abandon(episode, window=limit)
            expired.append(episode)
    return expired


def _abandon(episode: EpisodeState, *, window: float) -> None:
    episode.ending, episode.ended_at = ABANDONED, episode.last_at + window


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
        upstream=event.upstream or "",
    )

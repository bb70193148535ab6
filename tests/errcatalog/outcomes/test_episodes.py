"""Retry episodes: the rules as a pure function, then as stored by ingestion and closed by the periodic task."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from errcatalog.outcomes import episodes, ingest
from errcatalog.outcomes.episodes import EpisodeState, correlate
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.models import Episode
from errcatalog.outcomes.models import OutcomeEvent as OutcomeEventRow

WINDOW = 600
T0 = 1_800_000_000.0


@pytest.fixture(autouse=True)
def _rules(settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "RETRY_WINDOW_SECONDS": WINDOW, "MAX_ATTEMPTS": 3}


def call(outcome: str, ts: float, *, tool: str = "search", client: str = "token:1", **fields) -> OutcomeEvent:
    if outcome == "error":
        fields.setdefault("code", "E_UPSTREAM")
    return OutcomeEvent(tool=tool, outcome=outcome, client=client, ts=T0 + ts, **fields)


def run(events: list[OutcomeEvent], open_episodes: dict | None = None):
    return correlate({} if open_episodes is None else open_episodes, events, window=WINDOW, max_attempts=3)


def attempts(links) -> list[int]:
    return [link.attempt for link in links]


# --- The rules ------------------------------------------------------------------------------------------------


def test_success_without_an_error_is_no_episode():
    links, touched = run([call("ok", 0), call("ok", 1)])
    assert [link.episode for link in links] == [None, None]
    assert touched == []


def test_error_opens_an_episode_at_attempt_zero():
    links, touched = run([call("error", 0, variant="v2", interactive=True, sentry_event_id="a" * 32)])
    (episode,) = touched
    assert links[0].episode is episode and links[0].attempt == 0
    assert (episode.ending, episode.retries, episode.code, episode.variant) == ("open", 0, "E_UPSTREAM", "v2")
    assert episode.interactive and episode.sentry_event_id == "a" * 32
    assert episode.started_at == episode.last_at == T0


def test_first_retry_success_recovers_at_attempt_one():
    links, (episode,) = run([call("error", 0), call("ok", 5)])
    assert attempts(links) == [0, 1]
    assert (episode.ending, episode.recovered_at_attempt, episode.retries, episode.ended_at) == (
        "recovered",
        1,
        1,
        T0 + 5,
    )


def test_failed_retries_count_up_until_a_success():
    links, (episode,) = run([call("error", 0), call("error", 1), call("error", 2), call("ok", 3)])
    assert attempts(links) == [0, 1, 2, 3]
    assert (episode.ending, episode.recovered_at_attempt) == ("recovered", 3)


def seed_003_client(outcomes_of_retries: list[str]) -> list[OutcomeEvent]:
    """The calls of a client that follows seed 003 exactly: one failed call, then at most
    ``MAX_RETRY_ATTEMPTS = 3`` retries (``while (... && retryAttempts < MAX_RETRY_ATTEMPTS)``), stopping at the
    first success."""
    max_retry_attempts = 3
    calls = [call("error", 0)]
    for number, outcome in enumerate(outcomes_of_retries[:max_retry_attempts], start=1):
        calls.append(call(outcome, number))
        if outcome == "ok":
            break
    return calls


def test_the_third_failed_retry_exhausts_the_episode_as_seed_003_caps_retries_at_three():
    links, (episode,) = run(seed_003_client(["error", "error", "error"]))
    assert attempts(links) == [0, 1, 2, 3]
    # The fourth failed call is the client's last: the episode ends there, not at a fifth call that never comes.
    assert (episode.ending, episode.retries, episode.ended_at) == ("exhausted", 3, T0 + 3)
    assert episode.recovered_at_attempt is None


def test_two_failed_retries_leave_the_episode_open_for_the_third():
    links, (episode,) = run(seed_003_client(["error", "error"]))
    assert attempts(links) == [0, 1, 2]
    assert (episode.ending, episode.retries) == ("open", 2)


def test_success_at_the_third_and_last_retry_recovers():
    _links, (episode,) = run(seed_003_client(["error", "error", "ok"]))
    assert (episode.ending, episode.recovered_at_attempt) == ("recovered", 3)


def test_a_recovered_episode_resolves_from_the_first_failed_call_to_the_recovering_call():
    _links, (episode,) = run([call("error", 0), call("error", 12.5), call("input_required", 20), call("ok", 42.25)])
    assert (episode.ending, episode.resolution_seconds) == ("recovered", 42.25)


def test_episodes_that_did_not_recover_have_no_resolution_time():
    _links, (exhausted,) = run(seed_003_client(["error", "error", "error"]))
    _links, (still_open,) = run([call("error", 0)])
    _links, (abandoned, _next) = run([call("error", 0), call("error", WINDOW + 1)])
    assert [e.ending for e in (exhausted, still_open, abandoned)] == ["exhausted", "open", "abandoned"]
    assert exhausted.resolution_seconds is still_open.resolution_seconds is abandoned.resolution_seconds is None


def test_the_limit_is_the_setting():
    events = [call("error", n) for n in range(3)]
    _links, (episode,) = correlate({}, events, window=WINDOW, max_attempts=2)
    assert (episode.ending, episode.retries) == ("exhausted", 2)


def test_a_call_after_exhaustion_starts_fresh():
    links, touched = run([call("error", n) for n in range(4)] + [call("ok", 5), call("error", 6)])
    assert [episode.ending for episode in touched] == ["exhausted", "open"]
    assert links[4].episode is None and links[5].episode is touched[1] and links[5].attempt == 0


def test_retry_exactly_at_the_window_edge_still_counts():
    links, (episode,) = run([call("error", 0), call("ok", WINDOW)])
    assert attempts(links) == [0, 1] and episode.ending == "recovered"


def test_window_runs_from_the_latest_call_not_the_first():
    _links, (episode,) = run([call("error", 0), call("error", WINDOW), call("ok", 2 * WINDOW)])
    assert episode.ending == "recovered" and episode.recovered_at_attempt == 2


def test_call_after_the_window_abandons_the_episode_then_counts_fresh():
    links, (old, new) = run([call("error", 0), call("error", 10), call("error", 10 + WINDOW + 0.001)])
    assert (old.ending, old.ended_at, old.retries) == ("abandoned", T0 + 10 + WINDOW, 1)
    assert new.ending == "open" and links[2].episode is new and links[2].attempt == 0


def test_success_after_the_window_abandons_and_links_nowhere():
    links, (old,) = run([call("error", 0), call("ok", WINDOW + 1)])
    assert old.ending == "abandoned" and links[1].episode is None and links[1].attempt == 0


def test_input_required_joins_the_attempt_in_flight_without_counting_as_a_retry():
    links, (episode,) = run(
        [call("error", 0), call("input_required", 1), call("ok", 2, elicitation="accept")],
    )
    assert attempts(links) == [0, 1, 1]
    assert all(link.episode is episode for link in links)
    assert (episode.ending, episode.recovered_at_attempt, episode.retries) == ("recovered", 1, 1)


def test_input_required_keeps_the_window_alive():
    _links, (episode,) = run([call("error", 0), call("input_required", WINDOW), call("ok", 2 * WINDOW)])
    assert episode.ending == "recovered"


def test_input_required_without_an_open_episode_links_nowhere():
    links, touched = run([call("input_required", 0)])
    assert links[0].episode is None and touched == []


def test_clients_tools_and_sessions_have_separate_episodes():
    links, touched = run(
        [
            call("error", 0, client="token:1"),
            call("error", 0, client="token:2"),
            call("error", 0, tool="fetch"),
            call("error", 0, session="s1"),
            call("error", 0, session="s2"),
            call("ok", 1, client="token:2"),
            call("ok", 1, session="s1"),
        ]
    )
    assert [episode.ending for episode in touched] == ["open", "recovered", "open", "recovered", "open"]
    assert attempts(links) == [0, 0, 0, 0, 0, 1, 1]


def test_open_episodes_from_earlier_batches_continue():
    earlier = EpisodeState(
        tool="search", client="token:1", session="", code="E_OLD", variant="v1", interactive=False,
        sentry_event_id="", started_at=T0 - 100, last_at=T0 - 50, retries=2, pk=7,
    )  # fmt: skip
    open_episodes = {earlier.key: earlier}
    links, touched = run([call("ok", 0)], open_episodes)
    assert touched == [earlier] and links[0].attempt == 3
    assert (earlier.ending, earlier.recovered_at_attempt, earlier.code) == ("recovered", 3, "E_OLD")
    assert open_episodes == {}


# --- Stored by ingestion ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_episode_spanning_batches_is_continued_from_the_database():
    now = datetime.now(UTC).timestamp()
    first = OutcomeEvent(tool="search", client="token:1", outcome="error", code="E_X", variant="v3", ts=now - 30)
    second = OutcomeEvent(tool="search", client="token:1", outcome="error", code="E_Y", ts=now - 20)
    third = OutcomeEvent(tool="search", client="token:1", outcome="ok", ts=now - 10)
    for event in (first, second, third):
        assert ingest.ingest_events([event]) == 1
    episode = Episode.objects.get()
    assert (episode.ending, episode.retries, episode.recovered_at_attempt, episode.code, episode.variant) == (
        "recovered",
        2,
        2,
        "E_X",
        "v3",
    )
    rows = OutcomeEventRow.objects.order_by("occurred_at")
    assert [(row.attempt, row.episode_id) for row in rows] == [(0, episode.pk), (1, episode.pk), (2, episode.pk)]


@pytest.mark.django_db
def test_seed_003_client_exhausts_its_stored_episode_at_the_fourth_failed_call():
    now = datetime.now(UTC).timestamp()
    error = {"tool": "send_email", "client": "c", "outcome": "error", "code": "E_X"}
    events = [OutcomeEvent(**error, ts=now - 40 + n) for n in range(4)]
    assert ingest.ingest_events(events) == 4
    episode = Episode.objects.get()
    assert (episode.ending, episode.retries, episode.recovered_at_attempt) == ("exhausted", 3, None)
    assert episode.ended_at == episode.last_at
    # Nothing is left for the periodic closer: the episode is not counted as abandoned later.
    assert episodes.close_abandoned(datetime.fromtimestamp(now + 2 * WINDOW, UTC)) == 0
    assert Episode.objects.get().ending == "exhausted"


@pytest.mark.django_db
def test_ingestion_stores_the_resolution_time_of_episodes_recovered_in_one_batch_or_across_batches():
    now = datetime.now(UTC).timestamp()
    same_batch = [
        OutcomeEvent(tool="a", client="c", outcome="error", code="E_X", ts=now - 100),
        OutcomeEvent(tool="a", client="c", outcome="ok", ts=now - 97.5),
    ]
    ingest.ingest_events(same_batch)  # opened and recovered at once: the INSERT carries the time
    ingest.ingest_events([OutcomeEvent(tool="b", client="c", outcome="error", code="E_X", ts=now - 90)])
    ingest.ingest_events([OutcomeEvent(tool="b", client="c", outcome="error", code="E_X", ts=now - 60)])
    ingest.ingest_events([OutcomeEvent(tool="b", client="c", outcome="ok", ts=now - 30)])  # the UPDATE does
    ingest.ingest_events([OutcomeEvent(tool="d", client="c", outcome="error", code="E_X", ts=now - 10)])
    stored = dict(Episode.objects.values_list("tool", "resolution_seconds"))
    assert stored["a"] == pytest.approx(2.5, abs=1e-3)
    assert stored["b"] == pytest.approx(60.0, abs=1e-3)
    assert stored["d"] is None  # still open


@pytest.mark.django_db
def test_batch_is_correlated_in_time_order_whatever_its_order():
    now = datetime.now(UTC).timestamp()
    events = [
        OutcomeEvent(tool="search", client="c", outcome="ok", ts=now - 1),
        OutcomeEvent(tool="search", client="c", outcome="error", code="E_X", ts=now - 3),
        OutcomeEvent(tool="search", client="c", outcome="error", code="E_X", ts=now - 2),
    ]
    assert ingest.ingest_events(events) == 3
    episode = Episode.objects.get()
    assert (episode.ending, episode.recovered_at_attempt) == ("recovered", 2)


@pytest.mark.django_db
def test_abandoned_episode_and_its_successor_with_the_same_key_are_both_stored():
    now = datetime.now(UTC).timestamp()
    ingest.ingest_events([OutcomeEvent(tool="t", client="c", outcome="error", code="E_X", ts=now - WINDOW - 100)])
    ingest.ingest_events([OutcomeEvent(tool="t", client="c", outcome="error", code="E_Y", ts=now)])
    old, new = Episode.objects.order_by("started_at")
    assert (old.ending, old.ended_at, old.code) == ("abandoned", old.last_at + timedelta(seconds=WINDOW), "E_X")
    assert (new.ending, new.code) == ("open", "E_Y")


@pytest.mark.django_db
def test_close_abandoned_ends_only_episodes_whose_window_passed():
    now = datetime.now(UTC).timestamp()
    ingest.ingest_events(
        [
            OutcomeEvent(tool="old", client="c", outcome="error", code="E_X", ts=now - WINDOW - 5),
            OutcomeEvent(tool="fresh", client="c", outcome="error", code="E_X", ts=now - 5),
            OutcomeEvent(tool="done", client="c", outcome="error", code="E_X", ts=now - WINDOW - 9),
            OutcomeEvent(tool="done", client="c", outcome="ok", ts=now - WINDOW - 8),
        ]
    )
    assert episodes.close_abandoned() == 1
    old = Episode.objects.get(tool="old")
    assert (old.ending, old.ended_at) == ("abandoned", old.last_at + timedelta(seconds=WINDOW))
    assert Episode.objects.get(tool="fresh").ending == "open"
    assert Episode.objects.get(tool="done").ending == "recovered"
    assert episodes.close_abandoned() == 0
    later = datetime.fromtimestamp(now + WINDOW, UTC)
    assert episodes.close_abandoned(later) == 1
    assert Episode.objects.get(tool="fresh").ending == "abandoned"

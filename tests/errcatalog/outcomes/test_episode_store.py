"""Retry episodes in the database: ``episode_store`` loads open episodes, applies the rules and stores the
decisions, within ingestion; ``episode_close_abandoned`` ends episodes whose window passed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from errcatalog.outcomes import ingest
from errcatalog.outcomes.episode_store import episode_close_abandoned
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.models import Episode, OutcomeRecord

WINDOW = 600


@pytest.fixture(autouse=True)
def _rules(settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "RETRY_WINDOW_SECONDS": WINDOW, "MAX_ATTEMPTS": 3}


@pytest.mark.django_db
def test_episode_spanning_batches_is_continued_from_the_database():
    now = datetime.now(UTC).timestamp()
    first = OutcomeEvent(
        tool="search", client="token:1", session="s-1", outcome="error", code="E_X", variant="v3", ts=now - 30
    )
    second = OutcomeEvent(tool="search", client="token:1", session="s-1", outcome="error", code="E_Y", ts=now - 20)
    third = OutcomeEvent(tool="search", client="token:1", session="s-1", outcome="ok", ts=now - 10)
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
    rows = OutcomeRecord.objects.order_by("occurred_at")
    assert [(row.attempt, row.episode_id) for row in rows] == [(0, episode.pk), (1, episode.pk), (2, episode.pk)]


@pytest.mark.django_db
def test_seed_003_client_exhausts_its_stored_episode_at_the_fourth_failed_call():
    now = datetime.now(UTC).timestamp()
    error = {"tool": "send_email", "client": "c", "session": "s-1", "outcome": "error", "code": "E_X"}
    events = [OutcomeEvent(**error, ts=now - 40 + n) for n in range(4)]
    assert ingest.ingest_events(events) == 4
    episode = Episode.objects.get()
    assert (episode.ending, episode.retries, episode.recovered_at_attempt) == ("exhausted", 3, None)
    assert episode.ended_at == episode.last_at
    # Nothing is left for the periodic closer: the episode is not counted as abandoned later.
    assert episode_close_abandoned(now=datetime.fromtimestamp(now + 2 * WINDOW, UTC)) == 0
    assert Episode.objects.get().ending == "exhausted"


@pytest.mark.django_db
def test_ingestion_stores_the_resolution_time_of_episodes_recovered_in_one_batch_or_across_batches():
    now = datetime.now(UTC).timestamp()
    same_batch = [
        OutcomeEvent(tool="a", client="c", session="s-1", outcome="error", code="E_X", ts=now - 100),
        OutcomeEvent(tool="a", client="c", session="s-1", outcome="ok", ts=now - 97.5),
    ]
    ingest.ingest_events(same_batch)  # opened and recovered at once: the INSERT carries the time
    ingest.ingest_events([OutcomeEvent(tool="b", client="c", session="s-1", outcome="error", code="E_X", ts=now - 90)])
    ingest.ingest_events([OutcomeEvent(tool="b", client="c", session="s-1", outcome="error", code="E_X", ts=now - 60)])
    ingest.ingest_events(
        [OutcomeEvent(tool="b", client="c", session="s-1", outcome="ok", ts=now - 30)]
    )  # the UPDATE does
    ingest.ingest_events([OutcomeEvent(tool="d", client="c", session="s-1", outcome="error", code="E_X", ts=now - 10)])
    stored = dict(Episode.objects.values_list("tool", "resolution_seconds"))
    assert stored["a"] == pytest.approx(2.5, abs=1e-3)
    assert stored["b"] == pytest.approx(60.0, abs=1e-3)
    assert stored["d"] is None  # still open


@pytest.mark.django_db
def test_batch_is_correlated_in_time_order_whatever_its_order():
    now = datetime.now(UTC).timestamp()
    events = [
        OutcomeEvent(tool="search", client="c", session="s-1", outcome="ok", ts=now - 1),
        OutcomeEvent(tool="search", client="c", session="s-1", outcome="error", code="E_X", ts=now - 3),
        OutcomeEvent(tool="search", client="c", session="s-1", outcome="error", code="E_X", ts=now - 2),
    ]
    assert ingest.ingest_events(events) == 3
    episode = Episode.objects.get()
    assert (episode.ending, episode.recovered_at_attempt) == ("recovered", 2)


@pytest.mark.django_db
def test_abandoned_episode_and_its_successor_with_the_same_key_are_both_stored():
    now = datetime.now(UTC).timestamp()
    ingest.ingest_events(
        [OutcomeEvent(tool="t", client="c", session="s-1", outcome="error", code="E_X", ts=now - WINDOW - 100)]
    )
    ingest.ingest_events([OutcomeEvent(tool="t", client="c", session="s-1", outcome="error", code="E_Y", ts=now)])
    old, new = Episode.objects.order_by("started_at")
    assert (old.ending, old.ended_at, old.code) == ("abandoned", old.last_at + timedelta(seconds=WINDOW), "E_X")
    assert (new.ending, new.code) == ("open", "E_Y")


@pytest.mark.django_db
def test_close_abandoned_ends_only_episodes_whose_window_passed():
    now = datetime.now(UTC).timestamp()
    ingest.ingest_events(
        [
            OutcomeEvent(tool="old", client="c", session="s-1", outcome="error", code="E_X", ts=now - WINDOW - 5),
            OutcomeEvent(tool="fresh", client="c", session="s-1", outcome="error", code="E_X", ts=now - 5),
            OutcomeEvent(tool="done", client="c", session="s-1", outcome="error", code="E_X", ts=now - WINDOW - 9),
            OutcomeEvent(tool="done", client="c", session="s-1", outcome="ok", ts=now - WINDOW - 8),
        ]
    )
    assert episode_close_abandoned() == 1
    old = Episode.objects.get(tool="old")
    assert (old.ending, old.ended_at) == ("abandoned", old.last_at + timedelta(seconds=WINDOW))
    assert Episode.objects.get(tool="fresh").ending == "open"
    assert Episode.objects.get(tool="done").ending == "recovered"
    assert episode_close_abandoned() == 0
    later = datetime.fromtimestamp(now + WINDOW, UTC)
    assert episode_close_abandoned(now=later) == 1
    assert Episode.objects.get(tool="fresh").ending == "abandoned"

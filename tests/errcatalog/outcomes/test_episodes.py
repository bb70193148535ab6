"""Retry episodes, the rules: plain events and episodes in, decisions out, without a database or settings.

The database edge (``episode_store``) is tested with ingestion in ``test_episode_store.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from errcatalog.outcomes.episodes import EpisodeState, abandon_expired, correlate
from errcatalog.outcomes.events import OutcomeEvent

WINDOW = 600
SESSIONLESS_WINDOW = 60
T0 = 1_800_000_000.0
REPO_ROOT = Path(__file__).resolve().parents[3]


def call(
    outcome: str, ts: float, *, tool: str = "search", client: str = "token:1", session: str | None = "s-0", **fields
) -> OutcomeEvent:
    """A call of one MCP session (``s-0``) unless another session, or none, is given."""
    fields["session"] = session
    if outcome == "error":
        fields.setdefault("code", "E_UPSTREAM")
    return OutcomeEvent(tool=tool, outcome=outcome, client=client, ts=T0 + ts, **fields)


def run(events: list[OutcomeEvent], open_episodes: dict | None = None):
    return correlate(
        {} if open_episodes is None else open_episodes,
        events,
        window=WINDOW,
        sessionless_window=SESSIONLESS_WINDOW,
        max_attempts=3,
    )


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
    """The calls of a client that follows the question protocol exactly: one failed call, then at most
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
    _links, (episode,) = correlate({}, events, window=WINDOW, sessionless_window=SESSIONLESS_WINDOW, max_attempts=2)
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


# --- Which calls belong together ------------------------------------------------------------------------------


def test_a_success_in_the_same_session_within_the_window_recovers_the_error():
    links, (episode,) = run([call("error", 0, session="s-a"), call("ok", WINDOW - 1, session="s-a")])
    assert links[1].episode is episode and episode.ending == "recovered"


def test_a_success_in_another_session_is_not_a_recovery():
    # Another run of another script under the same token, six minutes later: its own call, not a retry.
    links, (episode,) = run([call("error", 0, session="s-a"), call("ok", 360, session="s-b")])
    assert links[1].episode is None and links[1].attempt == 0
    assert episode.ending == "open" and episode.retries == 0


def test_a_success_in_the_same_session_beyond_the_window_is_not_a_recovery():
    links, (episode,) = run([call("error", 0, session="s-a"), call("ok", WINDOW + 1, session="s-a")])
    assert links[1].episode is None and episode.ending == "abandoned"


def test_without_a_session_only_a_call_within_the_short_window_is_a_retry():
    # Nothing tells two runs under one token apart without a session: another script's success six minutes later
    # is not this error's recovery; the agent's own retry seconds later is.
    links, (episode,) = run([call("error", 0, session=None), call("ok", 5, session=None)])
    assert links[1].episode is episode and episode.ending == "recovered"
    links, (old,) = run([call("error", 0, session=None), call("ok", 360, session=None)])
    assert links[1].episode is None and (old.ending, old.ended_at) == ("abandoned", T0 + SESSIONLESS_WINDOW)


def test_a_call_without_a_session_does_not_continue_an_episode_of_a_session():
    links, (episode,) = run([call("error", 0, session="s-a"), call("ok", 5, session=None)])
    assert links[1].episode is None and episode.ending == "open"


def test_clean_up_abandons_an_episode_without_a_session_after_the_short_window():
    _links, (sessionless,) = run([call("error", 0, session=None)])
    _links, (in_session,) = run([call("error", 0, session="s-a")])
    now = T0 + SESSIONLESS_WINDOW + 1
    assert abandon_expired(
        [sessionless, in_session], now=now, window=WINDOW, sessionless_window=SESSIONLESS_WINDOW
    ) == [sessionless]


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
        tool="search", client="token:1", session="s-0", code="E_OLD", variant="v1", interactive=False,
        sentry_event_id="", started_at=T0 - 100, last_at=T0 - 50, retries=2, pk=7,
    )  # fmt: skip
    open_episodes = {earlier.key: earlier}
    links, touched = run([call("ok", 0)], open_episodes)
    assert touched == [earlier] and links[0].attempt == 3
    assert (earlier.ending, earlier.recovered_at_attempt, earlier.code) == ("recovered", 3, "E_OLD")
    assert open_episodes == {}


def test_a_retry_is_linked_to_the_error_that_caused_it_and_credits_its_wording():
    links, (episode,) = run(
        [
            call("error", 0, code="MISSING_PARAMETER", variant="friendly", locale="de", interactive=True),
            call("error", 1, code="RATE_LIMITED", variant="terse", locale="fr"),
            call("ok", 2, locale="fr"),
        ]
    )
    assert [link.episode for link in links] == [episode] * 3
    # The episode is the opening error's: its code, variant and interactivity are what the ending is credited to.
    assert (episode.code, episode.variant, episode.interactive) == ("MISSING_PARAMETER", "friendly", True)
    # Each link carries its own event, locale and variant included, for the row ingest writes.
    assert [(link.event.locale, link.event.variant) for link in links] == [
        ("de", "friendly"),
        ("fr", "terse"),
        ("fr", None),
    ]


def test_events_out_of_order_are_correlated_in_time_order():
    recovery, first, retry = call("ok", 2), call("error", 0), call("error", 1)
    links, (episode,) = run([recovery, first, retry])
    assert [(link.event, link.attempt) for link in links] == [(first, 0), (retry, 1), (recovery, 2)]
    assert (episode.ending, episode.recovered_at_attempt, episode.started_at) == ("recovered", 2, T0)
    assert episode.resolution_seconds == 2


def test_events_at_the_same_time_keep_the_order_they_came_in():
    links, (episode,) = run([call("error", 0), call("ok", 0)])
    assert attempts(links) == [0, 1] and episode.ending == "recovered"


def test_a_late_event_older_than_the_open_episode_neither_rewinds_its_last_call_nor_its_window():
    earlier = EpisodeState(
        tool="search", client="token:1", session="s-0", code="E_OLD", variant="", interactive=False,
        sentry_event_id="", started_at=T0, last_at=T0 + 100, retries=1, pk=7,
    )  # fmt: skip
    _links, (episode,) = run([call("error", 50)], {earlier.key: earlier})
    assert (episode.last_at, episode.retries, episode.ending) == (T0 + 100, 2, "open")


def test_abandon_expired_ends_open_episodes_at_the_end_of_their_window():
    def opened(tool: str, last: float, ending: str = "open") -> EpisodeState:
        return EpisodeState(
            tool=tool, client="c", session="s-0", code="E_X", variant="", interactive=False, sentry_event_id="",
            started_at=T0, last_at=T0 + last, ending=ending,
        )  # fmt: skip

    old, fresh, edge, recovered = (
        opened("old", 0),
        opened("fresh", 500),
        opened("edge", 100),
        opened("r", 0, "recovered"),
    )
    ended = abandon_expired(
        [old, fresh, edge, recovered], now=T0 + 700, window=WINDOW, sessionless_window=SESSIONLESS_WINDOW
    )
    assert ended == [old]
    assert (old.ending, old.ended_at, old.resolution_seconds) == ("abandoned", T0 + WINDOW, None)
    assert (fresh.ending, edge.ending, recovered.ending) == ("open", "open", "recovered")  # edge: exactly at the window
    assert abandon_expired(
        [fresh], now=T0 + 500 + WINDOW + 0.001, window=WINDOW, sessionless_window=SESSIONLESS_WINDOW
    ) == [fresh]


def test_abandonment_by_a_late_call_and_by_the_clean_up_agree():
    _links, (by_call, _fresh) = run([call("error", 0), call("error", 30), call("error", 30 + WINDOW + 5)])
    _links, (by_clean_up,) = run([call("error", 0), call("error", 30)])
    abandon_expired([by_clean_up], now=T0 + 30 + WINDOW + 5, window=WINDOW, sessionless_window=SESSIONLESS_WINDOW)
    assert (
        (by_call.ending, by_call.ended_at)
        == (by_clean_up.ending, by_clean_up.ended_at)
        == ("abandoned", T0 + 30 + WINDOW)
    )


def test_the_rules_import_neither_django_nor_a_database_driver():
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, errcatalog.outcomes.episodes; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'psycopg', 'redis', 'celery'}))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    )
    assert loaded.stdout.strip() == "[]"

"""``mcpserver.streams``: the process's store of SSE events for resumption, bounded in number and age, each session
replaying only its own. (Served: ``tests/conformance/test_fixtures.py`` resumes real streams after a disconnect.)"""

from __future__ import annotations

import asyncio

import mcp_types as types

from mcpserver.streams import ReplayStore


def _message(n: int) -> types.JSONRPCNotification:
    return types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": n})


def _replayed(view, last_event_id: str) -> tuple[str | None, list]:
    sent = []

    async def send(event):
        sent.append((event.event_id, event.message.params["n"]))

    stream = asyncio.run(view.replay_events_after(last_event_id, send))
    return stream, sent


def _store(view, stream: str, message) -> str:
    return asyncio.run(view.store_event(stream, message))


def test_a_session_replays_its_stream_after_the_last_event_it_saw():
    store = ReplayStore(100, 60)
    view = store.session_view()
    priming = _store(view, "1", None)
    first = _store(view, "1", _message(1))
    _store(view, "2", _message(99))  # another stream of the same session
    second = _store(view, "1", _message(2))
    assert _replayed(view, priming) == ("1", [(first, 1), (second, 2)])  # priming events are not replayed
    assert _replayed(view, second) == ("1", [])


def test_no_session_replays_another_sessions_events_even_on_the_same_request_id():
    store = ReplayStore(100, 60)
    alice, bob = store.session_view(), store.session_view()
    seen = _store(alice, "1", _message(1))
    _store(bob, "1", _message(2))
    _store(alice, "1", _message(3))
    assert [n for _, n in _replayed(alice, seen)[1]] == [3]
    assert _replayed(bob, seen) == (None, [])  # alice's event id means nothing to bob


def test_an_unknown_event_id_replays_nothing():
    view = ReplayStore(100, 60).session_view()
    _store(view, "1", _message(1))
    assert _replayed(view, "made-up") == (None, [])
    assert _replayed(view, "") == (None, [])


def test_the_store_keeps_at_most_its_bound_of_events_dropping_the_oldest():
    store = ReplayStore(3, 60)
    view = store.session_view()
    ids = [_store(view, "1", _message(n)) for n in range(5)]
    assert len(store) == 3
    assert _replayed(view, ids[0]) == (None, [])  # dropped
    assert [n for _, n in _replayed(view, ids[2])[1]] == [3, 4]


def test_events_older_than_the_bound_are_dropped():
    now = [0.0]
    store = ReplayStore(100, 30, clock=lambda: now[0])
    view = store.session_view()
    old = _store(view, "1", _message(1))
    now[0] = 20.0
    newer = _store(view, "1", _message(2))
    now[0] = 40.0
    assert _replayed(view, old) == (None, [])
    assert _replayed(view, newer) == ("1", [])
    now[0] = 51.0
    assert _replayed(view, newer) == (None, [])
    assert len(store) == 0


def test_event_ids_are_unguessable_and_distinct():
    view = ReplayStore(1000, 60).session_view()
    ids = {_store(view, "1", _message(n)) for n in range(200)}
    assert len(ids) == 200
    assert all(len(event_id) >= 20 for event_id in ids)

"""A 2026-07-28 call that may run long, answered as JSON, is cancelled when its client disconnects before the answer
(``mcpserver.long_calls.WatchedCall``), and only then: an answered call, or one whose handler gave no answer, ends
without waiting for the client. The gateway's tests show the same through a served app and a real upstream
(``tests/mcpserver/gateway/test_progress_and_cancellation.py``)."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from mcpserver.long_calls import WATCH_AFTER_SECONDS, WatchedCall, replayed, request_body, watchers

pytestmark = pytest.mark.anyio

BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call"}'


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Connection:
    """An ASGI server's side of one exchange: ``receive`` reports the disconnection once ``leave`` is called or the
    answer was sent, as uvicorn does."""

    def __init__(self) -> None:
        self.left = anyio.Event()
        self.sent: list[dict] = []

    async def receive(self) -> dict:
        await self.left.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        self.sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.left.set()

    def leave(self) -> None:
        self.left.set()

    async def leave_after(self, seconds: float) -> None:
        await anyio.sleep(seconds)
        self.leave()


async def _answer(scope, receive, send) -> None:
    assert await receive() == {"type": "http.request", "body": BODY, "more_body": False}
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def test_an_answered_call_ends_with_its_answer_and_nothing_is_cancelled():
    connection = Connection()
    tasks = len(asyncio.all_tasks())
    with anyio.fail_after(5):
        await WatchedCall(BODY, connection.receive, connection.send).run(_answer, {})
    assert [m["type"] for m in connection.sent] == ["http.response.start", "http.response.body"]
    assert len(asyncio.all_tasks()) == tasks  # a quick call started no watcher


async def test_a_call_past_the_watch_delay_that_is_answered_leaves_no_watcher_behind():
    connection = Connection()

    async def slow_answer(scope, receive, send) -> None:
        await anyio.sleep(WATCH_AFTER_SECONDS * 2)
        await _answer(scope, receive, send)

    with anyio.fail_after(5):
        await WatchedCall(BODY, connection.receive, connection.send).run(slow_answer, {})
        await anyio.sleep(0.01)  # the watcher hears the exchange is over
    assert [m["type"] for m in connection.sent] == ["http.response.start", "http.response.body"]
    assert all(watcher.done() for watcher in watchers)


async def test_a_client_that_leaves_before_the_answer_cancels_the_call():
    connection = Connection()
    cancelled = anyio.Event()

    async def long_call(scope, receive, send) -> None:
        await receive()
        try:
            await anyio.sleep(3600)
        finally:
            cancelled.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(connection.leave_after, 0.05)
            await WatchedCall(BODY, connection.receive, connection.send).run(long_call, {})
    assert cancelled.is_set() and connection.sent == []


async def test_a_handler_that_gives_no_answer_does_not_wait_for_the_client():
    connection = Connection()  # stays open: only the answer or the client's leaving would end the watch

    async def silent(scope, receive, send) -> None:
        await receive()

    with anyio.fail_after(5):
        await WatchedCall(BODY, connection.receive, connection.send).run(silent, {})
        await anyio.sleep(0)  # the watcher's cancellation is delivered
    assert connection.sent == [] and all(watcher.done() for watcher in watchers)  # none left on the connection


async def test_a_handler_reading_past_the_body_hears_the_disconnection():
    connection = Connection()
    heard: list[dict] = []

    async def reader(scope, receive, send) -> None:
        heard.append(await receive())
        heard.append(await receive())  # what Starlette's disconnect check does

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(connection.leave_after, 0.05)
            await WatchedCall(BODY, connection.receive, connection.send).run(reader, {})
    assert heard == [{"type": "http.request", "body": BODY, "more_body": False}, {"type": "http.disconnect"}]


async def test_a_body_in_chunks_is_read_whole_and_a_client_gone_before_its_end_gives_none():
    chunks = iter([
        {"type": "http.request", "body": BODY[:10], "more_body": True},
        {"type": "http.request", "body": BODY[10:], "more_body": False},
    ])  # fmt: skip

    async def receive() -> dict:
        return next(chunks)

    assert await request_body(receive) == BODY

    gone = iter([{"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}])

    async def receive_gone() -> dict:
        return next(gone)

    assert await request_body(receive_gone) is None


@pytest.mark.parametrize("quick", [False, True], ids=["alone", "among-quick-calls"])
async def test_long_calls_begun_at_different_times_are_each_watched_in_their_own_time(quick):
    """One timer serves every call: a call that began while an older one was due is watched in its own time, whether
    or not quick calls come and go meanwhile."""
    cancelled: list[str] = []
    most_watchers = 0

    def long_call(name: str):
        async def handle(scope, receive, send) -> None:
            await receive()
            try:
                await anyio.sleep(3600)
            finally:
                cancelled.append(name)

        return handle

    async def watched_long_call(name: str, leave_after: float) -> None:
        connection = Connection()
        async with anyio.create_task_group() as group:
            group.start_soon(connection.leave_after, leave_after)
            await WatchedCall(BODY, connection.receive, connection.send).run(long_call(name), {})
        assert connection.sent == []

    async def quick_calls() -> None:
        nonlocal most_watchers
        for _ in range(30):
            connection = Connection()
            await WatchedCall(BODY, connection.receive, connection.send).run(_answer, {})
            assert [m["type"] for m in connection.sent] == ["http.response.start", "http.response.body"]
            most_watchers = max(most_watchers, sum(not watcher.done() for watcher in watchers))
            await anyio.sleep(0.01)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(watched_long_call, "first", WATCH_AFTER_SECONDS * 3)
            await anyio.sleep(WATCH_AFTER_SECONDS / 2)
            group.start_soon(watched_long_call, "second", WATCH_AFTER_SECONDS * 1.5)
            if quick:
                group.start_soon(quick_calls)
    assert sorted(cancelled) == ["first", "second"]
    assert most_watchers <= 2  # the two long calls' watchers; the quick calls had none
    await anyio.sleep(0)
    assert all(watcher.done() for watcher in watchers)


async def test_the_streaming_path_gets_the_body_then_the_connection():
    connection = Connection()
    receive = replayed(BODY, connection.receive)
    assert await receive() == {"type": "http.request", "body": BODY, "more_body": False}
    connection.leave()
    assert await receive() == {"type": "http.disconnect"}

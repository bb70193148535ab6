"""A 2026-07-28 call that may run long, cancelled when its client goes away.

2026-07-28 has no client-to-server notifications: closing the request is how a client cancels a call. A call that
asked for notifications is answered over SSE by the SDK's streaming manager, which watches the connection itself
(``replayed`` hands it the connection after the body). Any other is answered as JSON, which the SDK does not watch:
``WatchedCall`` does, and cancels the call (upstream too, freeing its slot) when the client leaves before the answer.

Watching costs a task per call, and most calls are answered within milliseconds: a call is watched only once it has
run ``WATCH_AFTER_SECONDS``. One timer per event loop (``_Watchlist``) starts the watchers of the calls that reached
that age, so a quick call costs two dictionary operations rather than a timer of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from starlette.types import Message, Receive, Scope, Send

from mcpserver.gateway.parking import PARK_HEADER, ParkNaming

# How long a call runs before its connection is watched: most calls are answered sooner, and an abandoned one is
# cancelled this much later at most (and at once when its client left before the watch began).
WATCH_AFTER_SECONDS = 0.1
# A call due within this much of a sweep is watched in it, rather than by a timer of its own a moment later (the event
# loop may run a timer up to its clock's resolution early).
_SWEEP_SLACK_SECONDS = 0.001
# The watchers running (the event loop keeps only weak references to tasks).
watchers: set[asyncio.Task[None]] = set()

Handler = Callable[[Scope, Receive, Send], Awaitable[None]]


async def request_body(receive: Receive) -> bytes | None:
    """The whole request body (the guard has bounded its size), or None when the client disconnected first."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def replayed(body: bytes, receive: Receive) -> Receive:
    """``receive`` giving the body read already, then the connection's own messages (its disconnection)."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay


def park_named(message: Message, naming: ParkNaming) -> Message:
    """A response's start with ``PARK_HEADER`` naming the parked call ``naming`` holds, if any, so that a load
    balancer sends the client's next call to this process (``mcpserver.gateway.parking``); any other message as it
    is."""
    if naming.id is None or message["type"] != "http.response.start":
        return message
    return {**message, "headers": [*message.get("headers", ()), (PARK_HEADER, naming.id.encode())]}


def naming_parked_call(send: Send, naming: ParkNaming) -> Send:
    """``send`` with each response start ``park_named``."""

    async def named(message: Message) -> None:
        await send(park_named(message, naming))

    return named


class WatchedCall(ParkNaming):
    """One call answered as JSON, cancelled if its client disconnects before its answer was sent. A disconnection
    reported after the answer (the ASGI server's way of saying the exchange is over) cancels nothing.

    It is the handler's ``receive`` (the body read already, then the client's disconnection once the watcher saw it:
    only the watcher reads the connection after the body), its ``send`` (which notes the answer, and names the parked
    call the response answers for, as a ``ParkNaming``), and the call's watch. The watcher is a plain task, started
    once the call has run ``WATCH_AFTER_SECONDS``, that ends by itself once the answer is sent, when the ASGI server
    reports the exchange over."""

    __slots__ = ("_answered", "_body", "_connection", "_disconnected", "_gone", "_scope", "_send", "_watcher")

    def __init__(self, body: bytes, connection: Receive, send: Send) -> None:
        super().__init__()
        self._body: bytes | None = body
        self._connection = connection
        self._send = send
        self._answered = False
        self._gone = False
        self._disconnected: asyncio.Event | None = None  # made only for a handler that reads past the body
        self._watcher: asyncio.Task[None] | None = None
        # The call's cancel scope: asyncio's own, lighter than anyio's on every call, moved to now to cancel the call.
        self._scope = asyncio.timeout(None)

    async def run(self, handle: Handler, scope: Scope) -> None:
        watchlist = _watchlist()
        watchlist.add(self)
        try:
            async with self._scope:
                await handle(scope, self.receive, self.send)
        except TimeoutError:
            if not self._scope.expired():  # the handler's own, not the client's leaving
                raise
        finally:
            watchlist.discard(self)
            if self._watcher is not None and not self._answered:  # no answer for the ASGI server to end the exchange
                self._watcher.cancel()

    async def receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        if not self._gone:
            if self._disconnected is None:
                self._disconnected = asyncio.Event()
            await self._disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.body":
            await self._send(message)
            if not message.get("more_body", False):
                self._answered = True
            return
        await self._send(park_named(message, self))

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._answered:
            self._watcher = watcher = loop.create_task(self._watch())
            watchers.add(watcher)
            watcher.add_done_callback(watchers.discard)

    async def _watch(self) -> None:
        with contextlib.suppress(Exception):  # a connection that fails to report is one that left
            while (await self._connection())["type"] != "http.disconnect":
                pass
        self._gone = True
        if self._disconnected is not None:
            self._disconnected.set()
        if not self._answered:
            with contextlib.suppress(RuntimeError):  # the call ended meanwhile: nothing to cancel
                self._scope.reschedule(asyncio.get_running_loop().time())


class _Watchlist:
    """The calls of one event loop not watched yet, oldest first, with the time each began; one timer, set for the
    oldest, starts the watch of every call that has run ``WATCH_AFTER_SECONDS``."""

    __slots__ = ("_calls", "_timer", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._calls: dict[WatchedCall, float] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, call: WatchedCall) -> None:
        began = self.loop.time()
        self._calls[call] = began
        if self._timer is None:
            self._timer = self.loop.call_at(began + WATCH_AFTER_SECONDS, self._sweep)

    def discard(self, call: WatchedCall) -> None:
        self._calls.pop(call, None)

    def _sweep(self) -> None:
        self._timer = None
        due = self.loop.time() + _SWEEP_SLACK_SECONDS - WATCH_AFTER_SECONDS
        ripe = []
        for call, began in self._calls.items():
            if began > due:
                self._timer = self.loop.call_at(began + WATCH_AFTER_SECONDS, self._sweep)
                break
            ripe.append(call)
        for call in ripe:
            del self._calls[call]
            call.watch(self.loop)


_current: _Watchlist | None = None


def _watchlist() -> _Watchlist:
    """The running event loop's watchlist (a process serves from one loop; tests run several, one after another)."""
    global _current
    loop = asyncio.get_running_loop()
    current = _current
    if current is None or current.loop is not loop:
        current = _current = _Watchlist(loop)
    return current

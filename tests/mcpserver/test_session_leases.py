"""The per-token account of open 2025 sessions, on a clock the test moves (the HTTP side is test_sessions.py)."""

from __future__ import annotations

import asyncio

from mcpserver.auth import CLIENT_SCOPE_KEY, ClientIdentity
from mcpserver.sessions import SessionAdmission, SessionLeases


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _open(leases: SessionLeases, owner: str, session_id: str, limit: int = 10) -> bool:
    if not leases.reserve(owner, limit):
        return False
    leases.release(owner, session_id)
    return True


def test_a_place_is_held_while_a_session_is_being_opened():
    leases = SessionLeases(idle_seconds=60, clock=Clock())
    assert leases.reserve("token:1", 1)
    assert not leases.reserve("token:1", 1)  # the first opening has not been answered yet
    leases.release("token:1", None)  # refused by the SDK: nothing was opened
    assert leases.open_count("token:1") == 0


def test_an_idle_session_expires_after_the_idle_time_and_not_before():
    clock = Clock()
    leases = SessionLeases(idle_seconds=60, clock=clock)
    assert _open(leases, "token:1", "a", limit=1)
    clock.now += 59.9
    assert not leases.reserve("token:1", 1)
    clock.now += 0.1
    assert leases.reserve("token:1", 1)


def test_a_request_in_flight_holds_the_session_however_long_it_takes():
    clock = Clock()
    leases = SessionLeases(idle_seconds=60, clock=clock)
    _open(leases, "token:1", "a")
    assert leases.begin("a", "token:1")  # e.g. the client's GET stream
    clock.now += 3600
    assert leases.open_count("token:1") == 1
    leases.end("a", gone=False)
    clock.now += 59
    assert leases.open_count("token:1") == 1
    clock.now += 1
    assert leases.open_count("token:1") == 0


def test_a_deleted_session_frees_its_place_at_once():
    leases = SessionLeases(idle_seconds=60, clock=Clock())
    _open(leases, "token:1", "a")
    assert leases.begin("a", "token:1")
    leases.end("a", gone=True)
    assert leases.open_count("token:1") == 0 and len(leases) == 0


def test_another_tokens_requests_neither_hold_nor_end_a_session():
    clock = Clock()
    leases = SessionLeases(idle_seconds=60, clock=clock)
    _open(leases, "token:1", "a")
    assert not leases.begin("a", "token:2")
    assert leases.open_count("token:2") == 0
    assert leases.open_count("token:1") == 1


def test_tokens_have_places_of_their_own():
    leases = SessionLeases(idle_seconds=60, clock=Clock())
    assert _open(leases, "token:1", "a", limit=1)
    assert not leases.reserve("token:1", 1)
    assert _open(leases, "token:2", "b", limit=1)


def test_expired_sessions_of_owners_who_never_return_are_swept():
    clock = Clock()
    leases = SessionLeases(idle_seconds=60, clock=clock)
    for n in range(1000):
        _open(leases, f"token:{n}", f"s{n}")
    assert len(leases) == 1000
    clock.now += 61
    _open(leases, "token:new", "fresh")
    assert len(leases) == 1


def test_a_request_that_starts_before_the_initialize_is_answered_is_counted_and_the_deleted_session_stays_gone():
    # The order seen in a CI run: the client has the session id from the initialize response's headers and opens
    # its GET stream, then deletes the session, all before the initialize request's handler has returned.
    leases = SessionLeases(idle_seconds=1800, clock=Clock())
    assert leases.reserve("token:1", 2)
    assert not leases.begin("a", "token:1")  # the GET stream: not held yet...
    leases.adopt("a", "token:1")  # ...until the SDK accepts it (its response starts)
    assert leases.begin("a", "token:1")
    leases.end("a", gone=True)  # the DELETE
    leases.release("token:1", "a")  # the initialize handler returns only now
    leases.end("a", gone=False)  # the GET stream closes with the session
    assert leases.open_count("token:1") == 0 and len(leases) == 0


def test_an_ended_session_is_not_counted_again_by_a_late_answer():
    leases = SessionLeases(idle_seconds=60, clock=Clock())
    _open(leases, "token:1", "a")
    leases.ended("a")
    leases.adopt("a", "token:1")  # a response of the session that started after the DELETE
    assert not leases.begin("a", "token:1")
    assert leases.open_count("token:1") == 0


def test_the_memory_of_ended_sessions_is_bounded():
    from mcpserver.sessions import _MAX_ENDED

    leases = SessionLeases(idle_seconds=60, clock=Clock())
    for n in range(_MAX_ENDED + 10):
        leases.ended(f"s{n}")
    assert len(leases._ended) == _MAX_ENDED
    leases.adopt("s0", "token:1")  # forgotten first, so held again
    assert leases.open_count("token:1") == 1


class _SlowToReturnSdk:
    """An ASGI stand-in for the SDK's session manager whose ``initialize`` handler answers (headers and body) and
    returns only when told: the order in which a real client's GET stream and DELETE can overtake it."""

    def __init__(self) -> None:
        self.initialize_may_return = asyncio.Event()
        self.stream_may_end = asyncio.Event()

    async def __call__(self, scope, receive, send) -> None:
        if scope["method"] == "POST":  # initialize
            await send({"type": "http.response.start", "status": 200, "headers": [(b"mcp-session-id", b"s1")]})
            await send({"type": "http.response.body", "body": b"{}"})
            await self.initialize_may_return.wait()
        elif scope["method"] == "GET":  # the session's stream, open until the session ends
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await self.stream_may_end.wait()
            await send({"type": "http.response.body", "body": b""})
        else:  # DELETE
            self.stream_may_end.set()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})


def test_a_session_deleted_before_its_initialize_handler_returned_frees_its_place(settings):
    settings.MCP = {**settings.MCP, "MAX_SESSIONS_PER_TOKEN": 1, "RATE_LIMIT_PER_MINUTE": 0}
    sdk = _SlowToReturnSdk()
    admission = SessionAdmission(sdk, idle_seconds=1800)
    client = ClientIdentity(key="token:1", name="one")
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    def request(method: str, session: bytes | None = None):
        headers = [(b"mcp-session-id", session)] if session else []
        scope = {"type": "http", "method": method, "headers": headers, CLIENT_SCOPE_KEY: client}
        return admission(scope, receive, send)

    async def scenario() -> int:
        initialize = asyncio.create_task(request("POST"))
        await asyncio.sleep(0)  # answered; its handler has not returned
        stream = asyncio.create_task(request("GET", b"s1"))
        await asyncio.sleep(0)
        await request("DELETE", b"s1")
        await stream
        sdk.initialize_may_return.set()
        await initialize
        return admission.leases.open_count("token:1")

    assert asyncio.run(scenario()) == 0
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [200, 200, 200]

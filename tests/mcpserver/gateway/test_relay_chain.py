"""The one seam every relay of a forwarded call plugs into (``mcpserver.gateway.relays``, ``forwarded``): the chain in
one place, a new relay as one module and one line of it, and how a request an upstream makes during a call finds the
call. Against a real upstream server over HTTP, driven in this process."""

from __future__ import annotations

import anyio
import pytest

from mcpserver.gateway import relays
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.gateway.forwarded import ForwardedCall, calling, forwarding, outside_calls
from tests.mcpserver.gateway import audit_relay
from tests.mcpserver.gateway.test_connection import SETTINGS, _config
from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER, UpstreamProcess


def test_the_chain_is_one_list_outermost_first():
    assert [relay.__module__.rsplit(".", 1)[1] for relay in relays.CHAIN] == [
        "url_elicitation",
        "links",
        "log_messages",
        "park_for_round_trips",
    ]


@pytest.fixture
def upstream():
    server = UpstreamProcess(UPSTREAM_SERVER, "http").start()
    yield server
    server.kill()


def test_a_new_relay_is_one_module_and_one_line_of_the_chain(upstream, monkeypatch):
    monkeypatch.setattr(relays, "CHAIN", (*relays.CHAIN, audit_relay.relay))
    audit_relay.seen.clear()

    async def scenario():
        connection = UpstreamConnection(_config(upstream.url), SETTINGS, lambda: None)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run)
            result = await relays.relayed(ForwardedCall(connection, "echo", {"text": "hello"}))
            connection.stop()
        return result

    # The upstream got the call the new relay passed on; the relay saw what came back.
    result = anyio.run(scenario)
    assert result.content[0].text == "audited hello"
    assert audit_relay.seen == [("echo", {"text": "audited hello"}, result)]


def _call(tool: str) -> ForwardedCall:
    return ForwardedCall(None, tool, {})  # type: ignore[arg-type]  # no connection is needed to be found


def test_a_request_belongs_to_the_call_its_task_forwards_else_to_the_only_one_in_flight():
    one, two, three = _call("one"), _call("two"), _call("three")
    assert calling([]) is None
    assert calling([one]) is one
    assert calling([one, two]) is None  # whose?
    with forwarding(three):
        assert calling([one, two]) is three
        with outside_calls():
            assert calling([one]) is one


def test_a_task_started_outside_calls_belongs_to_none_of_them():
    first, later = _call("first"), _call("later")
    found: list[ForwardedCall | None] = []

    async def session(in_flight: list[ForwardedCall], asked: anyio.Event, answered: anyio.Event) -> None:
        await asked.wait()
        found.append(calling(in_flight))
        answered.set()

    async def scenario() -> None:
        in_flight: list[ForwardedCall] = []
        asked, answered = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tasks:
            # The first call opens a session that outlives it; a later call's request reaches that session's task.
            with forwarding(first), outside_calls():
                tasks.start_soon(session, in_flight, asked, answered)
            in_flight.append(later)
            asked.set()
            await answered.wait()

    anyio.run(scenario)
    assert found == [later]

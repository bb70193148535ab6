"""Checking a bearer token against the database: once per key at a time, and again before its entry expires."""

from __future__ import annotations

import asyncio

import pytest
from django.db import connection
from django.utils import timezone

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create, key_hash
from errcatalog.caching import caches_invalidate
from mcpserver import auth

pytestmark = pytest.mark.django_db(transaction=True)


class CountedChecks:
    """The real database check of a key, counted, and held back while ``hold`` is unset."""

    def __init__(self) -> None:
        self.real = auth._authenticate_async
        self.calls = 0
        self.hold: asyncio.Event | None = None

    async def __call__(self, raw_key: str):
        self.calls += 1
        if self.hold is not None:
            await self.hold.wait()
        return await self.real(raw_key)


@pytest.fixture
def checks(monkeypatch) -> CountedChecks:
    counted = CountedChecks()
    monkeypatch.setattr(auth, "_authenticate_async", counted)
    return counted


@pytest.fixture
def key(token_owner) -> str:
    _token, raw_key = client_token_create(user=token_owner, name="checked")
    return raw_key


def revoke_elsewhere(raw_key: str) -> None:
    """A revocation made by another process: the database changes, nothing here is told (no signal, no save)."""
    try:
        ClientToken.objects.filter(key_hash=key_hash(raw_key)).update(revoked_at=timezone.now())
    finally:
        connection.close()  # this thread's own


def test_requests_with_a_key_not_yet_accepted_wait_for_one_database_check(checks, key):
    async def scenario():
        return await asyncio.gather(*(auth._accepted_key(key) for _ in range(16)))

    answers = asyncio.run(scenario())
    assert checks.calls == 1
    assert {identity.name for identity, _user in answers} == {"checked"}
    assert len({id(answer) for answer in answers}) == 1


def test_a_key_in_use_is_checked_again_in_the_background_before_its_entry_expires(checks, key, monkeypatch):
    monkeypatch.setattr(auth, "AUTH_RECHECK_SECONDS", 0.0)  # due at once: every request finds its entry due

    async def scenario():
        first = await auth._accepted_key(key)
        checks.hold = asyncio.Event()
        # The entry is due for a check: requests are answered from it at once while one check runs behind them.
        during = await asyncio.gather(*(auth._accepted_key(key) for _ in range(8)))
        assert checks.calls == 2
        assert all(answer is first for answer in during)
        await asyncio.to_thread(revoke_elsewhere, key)
        checks.hold.set()
        await auth._checks.in_flight[key_hash(key)]
        # The check found the token revoked: the next request waits for a check of its own, which refuses it.
        checks.hold = None
        return await auth._accepted_key(key)

    assert asyncio.run(scenario()) is None
    assert checks.calls == 3
    assert auth._accepted.get(key_hash(key)) is None


def test_a_key_is_not_checked_again_while_its_entry_is_young(checks, key):
    async def scenario():
        for _ in range(50):
            await auth._accepted_key(key)

    asyncio.run(scenario())
    assert checks.calls == 1


def test_a_check_that_began_before_a_token_was_saved_here_keeps_nothing(checks, key):
    async def scenario():
        checks.hold = asyncio.Event()
        waiting = asyncio.ensure_future(auth._accepted_key(key))
        await asyncio.sleep(0.01)
        caches_invalidate(scope="tokens")  # what saving or deleting any token in this process does
        checks.hold.set()
        return await waiting

    identity, _user = asyncio.run(scenario())
    assert identity.name == "checked"  # the request that asked still gets its answer
    assert auth._accepted.get(key_hash(key)) is None  # but it is not remembered past the change


def test_a_request_that_goes_away_does_not_cancel_the_check_others_wait_for(checks, key):
    async def scenario():
        checks.hold = asyncio.Event()
        leaving = asyncio.ensure_future(auth._accepted_key(key))
        staying = asyncio.ensure_future(auth._accepted_key(key))
        await asyncio.sleep(0.01)
        leaving.cancel()
        checks.hold.set()
        return await staying

    identity, _user = asyncio.run(scenario())
    assert identity.name == "checked"
    assert checks.calls == 1


def test_a_check_that_fails_for_another_reason_than_the_database_is_logged_and_raised(monkeypatch, key, caplog):
    async def broken(raw_key: str):
        raise RuntimeError("a bug in the check")

    monkeypatch.setattr(auth, "_authenticate_async", broken)

    async def scenario():
        with pytest.raises(RuntimeError):
            await auth._accepted_key(key)
        await asyncio.sleep(0)  # the check's done callback

    with caplog.at_level("ERROR", logger="mcpserver.auth"):
        asyncio.run(scenario())
    assert [record.getMessage() for record in caplog.records] == ["Checking a client token failed"]

"""MCP calls over HTTP while the catalog is being rebuilt: answered at once, from the catalog they had."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import connection

from errcatalog.catalog import snapshot as snapshot_module
from errcatalog.catalog.models import ErrorCode
from errcatalog.catalog.snapshot import catalog_changed

pytestmark = pytest.mark.django_db(transaction=True)

EDITED = "Edited while the server rebuilds its catalog."


def test_calls_are_answered_from_the_old_catalog_while_a_rebuild_is_held_up(mcp, monkeypatch):
    async def explain(client):
        return (await client.call_tool("explain_error", {"code": "NETWORK_ERROR"})).structured_content["explanation"]

    before = mcp.run(explain)
    started, release = threading.Event(), threading.Event()
    real = snapshot_module.catalog_snapshot_from_db

    def slow(**options):
        started.set()
        assert release.wait(timeout=60), "the test never released the build"
        return real(**options)

    monkeypatch.setattr(snapshot_module, "catalog_snapshot_from_db", slow)
    ErrorCode.objects.filter(code="NETWORK_ERROR").update(explanation=EDITED)  # no signal: nothing rebuilds yet
    rebuild = threading.Thread(target=_rebuild)  # the process's rebuild, held inside the build
    rebuild.start()
    try:
        assert started.wait(timeout=20)

        async def within_the_hold(client):
            # A call that waited for the build would wait for the test, which waits here: it fails instead.
            return await asyncio.wait_for(explain(client), timeout=15)

        during = mcp.run(within_the_hold)
    finally:
        release.set()
        rebuild.join(timeout=20)
    after = mcp.run(explain)

    assert during == before
    assert EDITED not in set(before.values())
    assert set(after.values()) == {EDITED}


def _rebuild() -> None:
    try:
        catalog_changed()
    finally:
        connection.close()  # this thread's own: the test database must be droppable at the end

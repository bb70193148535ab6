"""The reach of ``mcpserver.sdk_internals.streams``: the SDK's session manager reads ``event_store`` once for each
session it opens and hands what it read to that session's transport."""

from __future__ import annotations

import inspect

from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from mcpserver.sdk_internals.streams import PerSessionEventStores
from mcpserver.streams import ReplayStore
from tests.mcpserver.sdk_internals.support import revisit


def _manager(store: ReplayStore) -> PerSessionEventStores:
    return PerSessionEventStores(Server("contract"), session_store=store.session_view)


def test_each_session_the_manager_opens_gets_a_store_of_its_own():
    admit = getattr(StreamableHTTPSessionManager, "_admit_session", None)
    assert admit is not None, revisit("streams", "the manager no longer opens sessions in _admit_session")
    assert "self.event_store" in inspect.getsource(admit), revisit(
        "streams", "_admit_session no longer reads the manager's event_store"
    )
    manager = _manager(ReplayStore(10, 60))
    first, second = manager._admit_session(None), manager._admit_session(None)
    stores = (getattr(first, "_event_store", None), getattr(second, "_event_store", None))
    assert all(stores) and stores[0] is not stores[1], revisit("streams", "sessions no longer keep their own store")


def test_without_the_fast_paths_no_stream_is_resumable(settings):
    settings.MCP = {**settings.MCP, "SDK_FAST_PATHS": False}
    manager = _manager(ReplayStore(10, 60))
    assert manager.event_store is None
    assert getattr(manager._admit_session(None), "_event_store", "missing") is None

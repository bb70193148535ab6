"""Fixtures the gateway's test modules share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcpserver.gateway.upstreams import UpstreamProcess, everything_server


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory) -> Iterator[UpstreamProcess]:
    """npm's server-everything over Streamable HTTP, in a process of its own for the module that asks for it."""
    log = tmp_path_factory.mktemp("everything") / "log"
    upstream = UpstreamProcess.command_line([*everything_server(), "streamableHttp"], log=log).start()
    yield upstream
    upstream.kill()

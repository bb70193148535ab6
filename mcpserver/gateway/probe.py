"""Connecting to an upstream once, to see what it would serve: admin's "test connection" and ``manage.py upstreams``.

``probe`` opens a connection as the supervisor would (``connection``), lists the tools, and disconnects (a stdio
child is stopped); what failed is told in fixed words (``failures.failure_for_staff``), and a stdio child's last
stderr lines go to the operator at the server's shell only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.gateway.connection import CONNECT_WAIT_SECONDS, UpstreamConnection


@dataclass(frozen=True)
class ProbeResult:
    """What connecting to an upstream once showed: for admin's "test connection" and ``manage.py upstreams``."""

    ok: bool
    protocol_version: str | None = None
    tools: tuple[str, ...] = ()
    failure: str = ""  # fixed words for staff (``failure_for_staff``), never the upstream's text
    seconds: float = 0.0
    # A failed stdio child's last stderr lines (cut, credentials redacted): the upstream's own text, for the operator
    # at the server's shell (``manage.py upstreams --check``) only, never for admin's pages or a model.
    stderr_tail: tuple[str, ...] = ()


async def probe(config: UpstreamConfig, settings: Mapping[str, Any]) -> ProbeResult:
    """Connect to the upstream, list the tools it would expose, and disconnect (a stdio child is stopped)."""
    connection = UpstreamConnection(config, settings, lambda: None)
    started = time.perf_counter()
    try:
        with anyio.fail_after(max(config.timeout_seconds, CONNECT_WAIT_SECONDS) + 5):
            async with AsyncExitStack() as stack:
                client = await connection.open_and_list(stack)
                version = client.protocol_version
    except Exception as exc:  # whatever failed is the answer
        connection.note_failure(exc, "being tested")
        seconds = time.perf_counter() - started
        stderr = connection.stderr
        # The child is stopped and our copy of the pipe closed: its reader sees the end once it read the rest.
        tail = await anyio.to_thread.run_sync(stderr.tail) if stderr is not None else ()
        return ProbeResult(False, failure=connection.last_failure, seconds=seconds, stderr_tail=tail)
    return ProbeResult(True, version, tuple(sorted(connection.tools)), seconds=time.perf_counter() - started)

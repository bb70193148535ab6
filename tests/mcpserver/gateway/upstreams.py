"""The gateway tests' upstream servers, each in a process of its own on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx2

from tests.errcatalog.outcomes.conftest import wait_until
from tests.errcatalog.outcomes.recorder_support import free_port

HERE = Path(__file__).parent
# An SDK MCPServer with working and hostile failing tools (``upstream_server.py stdio`` runs it over stdio).
UPSTREAM_SERVER = str(HERE / "upstream_server.py")
# A raw server that answers the handshake well and its tool calls with HTTP errors and garbage.
GARBAGE_SERVER = str(HERE / "garbage_server.py")


class UpstreamProcess:
    """``python SCRIPT [ARGS] PORT`` serving Streamable HTTP at ``url``; ``start`` waits until it answers, ``kill``
    takes it away at once, and ``start`` again brings it back on the same port."""

    def __init__(self, script: str, *args: str, log: Path | None = None) -> None:
        self.command = [sys.executable, script, *args, str(free_port())]
        self.url = f"http://127.0.0.1:{self.command[-1]}/mcp"
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self) -> UpstreamProcess:
        out = self.log.open("ab") if self.log else None
        try:
            self.process = subprocess.Popen(  # noqa: S603 (fixed command line)
                self.command, stdout=out, stderr=subprocess.STDOUT if out else None
            )
        finally:
            if out is not None:
                out.close()  # the child has its own copy
        wait_until(self._answers, seconds=30, what="the upstream to answer")
        return self

    def _answers(self) -> bool:
        try:
            httpx2.get(self.url, timeout=1)
        except httpx2.TransportError:
            return False
        return True

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

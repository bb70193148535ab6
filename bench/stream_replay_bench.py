"""What resumable 2025-11-25 streams cost a call: the app with ``ERRCATALOG_MCP_STREAM_REPLAY_EVENTS`` at its default
and at 0, interleaved in one run.

    .venv/bin/python bench/stream_replay_bench.py [--rounds 8] [--seconds 5] [--concurrency 8]

Two uvicorn processes (the catalog's tools, auth and the rate limit off, a throwaway SQLite data dir), pinned to CPU 0;
the load (2025-11-25 sessions, one per connection, each calling ``explain_error`` over SSE) runs in this process, to be
pinned to CPU 1 (``taskset -c 1``). Rounds alternate between the two and the order flips every round. Reported: calls/s
per round, and the server's CPU time per call (from /proc, steadier than throughput on a shared machine), with the
median of the rounds. With the store on, each call's stream starts with a priming event (the cost) and its events are
kept for a reconnection.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SETUP = (
    "import django; django.setup(); from django.core.management import call_command; "
    "call_command('migrate', interactive=False, verbosity=0); call_command('catalog_load_defaults', verbosity=0)"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    opened = await http.post(url, json=initialize, headers=HEADERS)
    headers = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


async def _load(url: str, seconds: float, concurrency: int) -> float:
    """Calls per second of ``concurrency`` sessions calling for ``seconds``; each answer is checked."""
    async with httpx2.AsyncClient(timeout=10, limits=httpx2.Limits(max_connections=concurrency)) as http:
        sessions = [await _session(http, url) for _ in range(concurrency)]
        done = 0
        end = time.monotonic() + seconds

        async def calls(headers: dict[str, str]) -> None:
            nonlocal done
            request_id = 1
            while time.monotonic() < end:
                body = {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": "explain_error", "arguments": {"code": "TIMEOUT"}},
                }
                answer = await http.post(url, json=body, headers=headers)
                if answer.status_code != 200 or '"result"' not in answer.text:
                    raise RuntimeError(f"a wrong answer: {answer.status_code} {answer.text[:200]}")
                done += 1
                request_id += 1

        await asyncio.gather(*(calls(headers) for headers in sessions))
        for headers in sessions:
            await http.delete(url, headers=headers)
        return done / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=8)
    options = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="stream-replay-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERRCATALOG_") and k != "DATABASE_URL"}
    env |= {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "ERRCATALOG_DATA_DIR": str(data),
        "ERRCATALOG_MCP_AUTH": "0",
        "ERRCATALOG_MCP_RATE_LIMIT": "0",
        "ERRCATALOG_MCP_TOOLSETS": "catalog",
    }
    subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True)  # noqa: S603
    servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    uvicorn = str(Path(sys.executable).with_name("uvicorn"))
    try:
        for name, events in (("on", "10000"), ("off", "0")):
            port = _free_port()
            command = ["taskset", "-c", "0", uvicorn, "config.asgi:application", "--port", str(port)]
            process = subprocess.Popen(  # noqa: S603
                [*command, "--log-level", "warning"],
                cwd=ROOT,
                env=env | {"ERRCATALOG_MCP_STREAM_REPLAY_EVENTS": events},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            servers[name] = (process, f"http://127.0.0.1:{port}/mcp")
        time.sleep(8)
        rates: dict[str, list[float]] = {"on": [], "off": []}
        cpu: dict[str, list[float]] = {"on": [], "off": []}
        for round_ in range(options.rounds):
            for name in ("on", "off") if round_ % 2 == 0 else ("off", "on"):
                process, url = servers[name]
                asyncio.run(_load(url, 1, options.concurrency))  # warm-up
                before = _cpu_seconds(process.pid)
                rate = asyncio.run(_load(url, options.seconds, options.concurrency))
                cpu[name].append((_cpu_seconds(process.pid) - before) / (rate * options.seconds) * 1e6)
                rates[name].append(rate)
        for name in ("on", "off"):
            median = sorted(cpu[name])[len(cpu[name]) // 2]
            print(f"replay {name:3}: calls/s {[round(r) for r in rates[name]]}")
            print(f"           server CPU µs per call {[round(c) for c in cpu[name]]}, median {median:.0f}")
        print(f"calls/s on/off: {sum(rates['on']) / sum(rates['off']):.3f}")
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

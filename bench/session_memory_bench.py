"""Memory of one web process when one token opens many 2025-11-25 sessions, with and without the per-token cap.

    .venv/bin/python bench/session_memory_bench.py [--attempts 5000] [--concurrency 20]

Serves ``config.asgi:application`` (production settings, bearer auth, rate limit raised out of the way) the way
``bench/mcp_bench.py`` does, once with the default cap (``ERRCATALOG_MCP_MAX_SESSIONS_PER_TOKEN`` = 50) and once
with the cap raised to the number of attempts (what the endpoint did before the cap: only the SDK's process-wide
limit of 10,000 sessions, answered with 503). One token sends ``--attempts`` raw ``initialize`` POSTs and never
closes a session. Reported per run: the server's resident memory (VmRSS) before and after, the answers by HTTP
status, and how many sessions are still served (a ping on each session ID: 200 alive, 404 gone).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.mcp_bench import free_port, prepare_data_dir, server_env, start_server

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
).encode()
PING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _post(port: int, token: str, body: bytes, session: str | None = None) -> tuple[int, str | None]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    headers = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    )
    if session:
        headers += f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    writer.write(headers.encode() + b"\r\n" + body)
    raw = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    sid = next((h.split(":", 1)[1].strip() for h in head[1:] if h.lower().startswith("mcp-session-id:")), None)
    return status, sid


async def _attack(port: int, token: str, attempts: int, concurrency: int) -> tuple[Counter, list[str]]:
    statuses: Counter = Counter()
    opened: list[str] = []
    for start in range(0, attempts, concurrency):
        answers = await asyncio.gather(
            *(_post(port, token, INITIALIZE) for _ in range(min(concurrency, attempts - start)))
        )
        for status, sid in answers:
            statuses[status] += 1
            if status == 200 and sid:
                opened.append(sid)
    return statuses, opened


async def _alive(port: int, token: str, sessions: list[str]) -> int:
    alive = 0
    for start in range(0, len(sessions), 50):
        answers = await asyncio.gather(*(_post(port, token, PING, sid) for sid in sessions[start : start + 50]))
        alive += sum(1 for status, _ in answers if status == 200)
    return alive


def run(label: str, cap: int, attempts: int, concurrency: int) -> dict:
    data_dir = Path(tempfile.mkdtemp(prefix="errcatalog-session-bench-"))
    env = server_env(
        data_dir,
        ERRCATALOG_MCP_MAX_SESSIONS_PER_TOKEN=str(cap),
        LOG_LEVEL="CRITICAL",
    )
    server = None
    try:
        token = prepare_data_dir(env, "session-bench")
        port = free_port()
        server = start_server("config.asgi:application", port, env, data_dir / "server.log", pin=False)
        deadline = time.monotonic() + 60
        while True:
            try:
                asyncio.run(_post(port, token, PING))
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit((data_dir / "server.log").read_text()[-3000:]) from None
                time.sleep(0.2)
        # One session opened first (it counts against the cap), so the code paths are loaded before the baseline.
        asyncio.run(_attack(port, token, 1, 1))
        before = rss_mb(server.pid)
        statuses, opened = asyncio.run(_attack(port, token, attempts, concurrency))
        after = rss_mb(server.pid)
        alive = asyncio.run(_alive(port, token, opened))
        return {"run": label, "cap": cap, "rss_before_mb": round(before), "rss_after_mb": round(after),
                "statuses": dict(statuses), "sessions_alive": alive}  # fmt: skip
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=20)
    args = parser.parse_args()
    for label, cap in (("default cap", 50), ("cap raised (as before)", args.attempts)):
        print(json.dumps(run(label, cap, args.attempts, args.concurrency)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

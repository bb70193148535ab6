"""CPU per ``tools/call`` of our /mcp app against a bare SDK ``MCPServer``, in process, without sockets.

    .venv/bin/python bench/call_path_bench.py [--calls 5000] [--rounds 3] [--profile DIR] [--redis-url URL]

Where ``bench/mcp_bench.py`` measures throughput over HTTP (noisy: a load generator, sockets, uvicorn), this one
calls each ASGI app directly from an event loop, one call after another, with the requests ``mcp_bench`` sends
(its three cases), and reports the CPU time per call of each (all threads: a sync tool runs in a worker thread)
and the ratio bare/ours (goal >= 1.0x, as in ``mcp_bench``). Each round runs each app in a process of its own
(one process's heap would slow the other's garbage collection), alternating; each is warmed up first
(``--warmup`` calls, enough for the outcome recorder to have sent batches, so its start-up is not counted), and
the least disturbed round counts. Setup as in ``mcp_bench``: a throwaway SQLite data dir, the default
catalog, a real token, ``DJANGO_SETTINGS_MODULE=bench.settings``, production mode, logging of failed calls off.

``--profile DIR`` runs each app and case once more under cProfile and writes ``DIR/<app>-<case>.pstats``
(``python -m pstats``, or ``snakeviz``). On Python 3.12 cProfile sees every thread, and a thread's time between
two events can land on another thread's function: trust ``tottime`` of the event loop's functions, not the
cumulative time of the recorder's or a worker thread's.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.mcp_bench import CASES, build_request, empty_redis, expected, prepare_data_dir, server_env

App = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]


def _environment(data_dir: Path, redis_url: str) -> dict[str, str]:
    env = server_env(data_dir, LOG_LEVEL="CRITICAL", BENCH_BARE_LOG_LEVEL="CRITICAL")
    if redis_url:
        env.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
    return env


class Caller:
    """One app, started (its lifespan), called with raw ASGI messages."""

    def __init__(self, app: App, target: str, token: str) -> None:
        self.app, self.target, self.token = app, target, token
        self._lifespan_in: asyncio.Queue[dict] = asyncio.Queue()
        self._lifespan_out: asyncio.Queue[dict] = asyncio.Queue()
        self._lifespan: asyncio.Task[None] | None = None
        self.requests: dict[str, tuple[dict, bytes]] = {}
        for case in CASES:
            head, body = build_request(8000, token, case).split(b"\r\n\r\n", 1)
            headers = [
                (name.strip().lower().encode(), value.strip().encode())
                for name, _, value in (line.partition(":") for line in head.decode().split("\r\n")[1:])
            ]
            scope = {
                "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
                "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "", "headers": headers,
                "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
            }  # fmt: skip
            self.requests[case] = (scope, body)

    async def start(self) -> None:
        self._lifespan = asyncio.create_task(
            self.app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, self._lifespan_in.get, self._put)
        )
        await self._lifespan_in.put({"type": "lifespan.startup"})
        started = await self._lifespan_out.get()
        if started["type"] != "lifespan.startup.complete":
            raise SystemExit(f"{self.target} did not start: {started}")

    async def stop(self) -> None:
        await self._lifespan_in.put({"type": "lifespan.shutdown"})
        await self._lifespan_out.get()

    async def _put(self, message: dict) -> None:
        await self._lifespan_out.put(message)

    async def call(self, case: str) -> tuple[int, bytes]:
        scope, body = self.requests[case]
        sent: list[dict] = []
        delivered = False

        async def receive() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # the client never disconnects
            raise AssertionError("unreachable")

        async def send(message: dict) -> None:
            sent.append(message)

        await self.app(dict(scope), receive, send)
        return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])

    async def check(self, case: str) -> None:
        status, body = await self.call(case)
        if status != 200 or not expected(self.target, case, json.loads(body)):
            raise SystemExit(f"{self.target} gives an unexpected answer for {case}: {status} {body[:300]!r}")

    async def cpu_per_call(self, case: str, calls: int) -> float:
        started = time.process_time()
        for _ in range(calls):
            await self.call(case)
        return (time.process_time() - started) / calls


async def measure(target: str, args: argparse.Namespace, token: str) -> dict[str, float]:
    """In a child process: one app, warmed up, then ``--calls`` calls of each case; CPU seconds per call by case."""
    app: Any
    if target == "ours":
        from config.asgi import application as app
    else:
        from bench.bare_server import app
    caller = Caller(app, target, token)
    await caller.start()
    try:
        for case in CASES:
            await caller.check(case)
            for _ in range(args.warmup):
                await caller.call(case)
        cpu = {case: await caller.cpu_per_call(case, args.calls) for case in CASES}
        if args.profile:
            folder = Path(args.profile)
            folder.mkdir(parents=True, exist_ok=True)
            for case in CASES:
                profile = cProfile.Profile()
                profile.enable()
                for _ in range(args.calls):
                    await caller.call(case)
                profile.disable()
                profile.dump_stats(folder / f"{target}-{case.replace(' ', '_')}.pstats")
        return cpu
    finally:
        await caller.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per case and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per app (alternating, a process each)")
    parser.add_argument("--warmup", type=int, default=2000, help="unmeasured calls per case first")
    parser.add_argument("--goal", type=float, default=1.0, help="required ratio bare/ours of CPU per call")
    parser.add_argument("--profile", default="", help="a folder for cProfile statistics per app and case")
    parser.add_argument("--redis-url", default="", help="serve ours with this Redis (emptied first and after)")
    parser.add_argument("--child", nargs=3, metavar=("TARGET", "DATA_DIR", "TOKEN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        target, data_dir, token = args.child
        os.environ.update(_environment(Path(data_dir), args.redis_url))
        print(json.dumps(asyncio.run(measure(target, args, token))))
        return 0

    data_dir = Path(tempfile.mkdtemp(prefix="errcatalog-call-path-bench-"))
    try:
        if args.redis_url:
            empty_redis(args.redis_url)
        token = prepare_data_dir(_environment(data_dir, args.redis_url), "call-path-bench")
        print(
            f"call path: CPU per tools/call in process, {args.calls} calls per case, {args.rounds} rounds per app"
            f" (a process each){', ours with Redis' if args.redis_url else ''}"
        )
        cpu: dict[str, dict[str, list[float]]] = {"ours": {}, "bare": {}}
        for round_number in range(args.rounds):
            order = ["ours", "bare"] if round_number % 2 == 0 else ["bare", "ours"]
            for target in order:
                profile = ["--profile", args.profile] if args.profile and round_number == 0 else []
                command = [
                    sys.executable, __file__, "--calls", str(args.calls), "--warmup", str(args.warmup),
                    "--redis-url", args.redis_url, *profile, "--child", target, str(data_dir), token,
                ]  # fmt: skip
                done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603 (ours)
                if done.returncode:
                    raise SystemExit(f"{target} failed:\n{done.stderr[-3000:]}")
                for case, seconds in json.loads(done.stdout.strip().splitlines()[-1]).items():
                    cpu[target].setdefault(case, []).append(seconds)
        print(f"\n  {'case':12s} {'ours us':>9s} {'bare us':>9s}   ratio bare/ours (rounds)")
        for case in CASES:
            ours, bare = min(cpu["ours"][case]), min(cpu["bare"][case])  # the least disturbed round of each
            rounds = [b / o for o, b in zip(cpu["ours"][case], cpu["bare"][case], strict=True)]
            flag = "ok" if bare / ours >= args.goal else "BELOW GOAL"
            print(
                f"  {case:12s} {ours * 1e6:9.1f} {bare * 1e6:9.1f}   {bare / ours:.2f}x {flag} "
                f"({min(rounds):.2f}-{max(rounds):.2f}x)"
            )
        if args.profile:
            print(f"\ncProfile statistics of {args.calls} calls per app and case in {args.profile}/")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        if args.redis_url:
            empty_redis(args.redis_url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A tool called through the gateway against the same upstream called directly, interleaved in one run.

    .venv/bin/python bench/gateway_bench.py [--seconds 4] [--rounds 4] [--concurrency 16] [--notices 50]
                                            [--progress-calls 20] [--mode auto|legacy]

The upstream is ``bench.bare_server:app`` (an SDK ``MCPServer``, Streamable HTTP, JSON responses, stateless).
"direct" calls its ``echo``; "gateway" calls ``up__echo`` on our endpoint (``config.asgi:application``,
production mode, a real token), which forwards it to the same upstream. Both are raw ``tools/call`` POSTs from
``bench/mcp_bench.py``'s load generator, in its own process, with rounds alternating and the order flipping each
round. As a gateway is deployed, it has a core of its own (CPU 1); the upstream and the load generator share the
other (CPU 0) in both cases, so each request costs CPU 0 the same either way. Reported per target: requests/s and
p50/p99 at ``--concurrency`` open connections, and p50 with one; then the throughput ratio gateway/direct (goal >=
0.7x), the p50 the gateway adds to a lone call (goal <= 1 ms) and the gateway's CPU time per forwarded call.

``--mode`` is the protocol generation of every call, named as the SDK's client names it: ``auto`` (the default),
2026-07-28 requests that each stand alone; ``legacy``, a 2025-11-25 session opened on each connection
(``initialize``, ``notifications/initialized``, then its ``Mcp-Session-Id`` on every call; the stateless upstream
names none) and ended after the round, whose calls the gateway forwards over an upstream session of that session's
own. A round's requests/s count its time from the first connection, handshakes included.

Then the progress relay: ``bench.bare_server:progress_app`` (the same, over SSE) reports progress ``n`` times per
call; the SDK's client calls it with a progress callback, in the same ``--mode``, directly and through the gateway
(``prog__count``), with ``n`` = 0 and ``n`` = ``--notices``. What one relayed notification adds is the gateway's
extra time for the notices, per notice: ((gateway n - gateway 0) - (direct n - direct 0)) / n, from median call
times (goal < 1 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.mcp_bench import (
    MODES,
    free_port,
    manage,
    percentile,
    prepare_data_dir,
    server_env,
    start_server,
    wait_ready,
)

UPSTREAM_TOOL = "up__echo"
PROGRESS_TOOL = "prog__count"


# The upstream and the load generator share one core; the gateway has the other.
SHARED_CPU, GATEWAY_CPU = 0, 1


def _load(port: int, token: str, seconds: float, concurrency: int, mode: str, tool: str | None) -> dict:
    pin = ["taskset", "-c", str(SHARED_CPU)] if shutil.which("taskset") else []
    command = [*pin, sys.executable, str(Path(__file__).with_name("mcp_bench.py")), "--load", str(port), token,
               "bare", "success", str(seconds), str(concurrency), "0", mode, *([tool] if tool else [])]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603 (fixed arguments)
    return json.loads(done.stdout)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process and its children so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command: utime, stime, cutime, cstime are fields 14-17 of stat(5), counted from 1.
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


async def _progress_calls(url: str, token: str, tool: str, n: int, calls: int, mode: str) -> list[float]:
    """Seconds per call of ``tool(n)``, each call's progress notifications all received (one client, in turn)."""
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    times = []
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        seen: list[float] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append(value)

        for _ in range(calls):
            seen.clear()
            started = time.perf_counter()
            result = await client.call_tool(tool, {"n": n}, progress_callback=progress)
            times.append(time.perf_counter() - started)
            if result.is_error or len(seen) != n:
                raise SystemExit(f"{tool}(n={n}) at {url}: {len(seen)} notices, error={result.is_error}")
    return times


def _progress_relay(urls: dict[str, str], token: str, notices: int, calls: int, mode: str) -> None:
    tools = {"direct": "count", "gateway": PROGRESS_TOOL}
    median: dict[tuple[str, int], float] = {}
    for n in (0, notices, 0, notices):  # interleaved: drift over the run falls on both sides
        for target in tools:
            times = asyncio.run(_progress_calls(urls[target], token, tools[target], n, calls, mode))
            p50 = percentile(sorted(times), 0.5)
            median[(target, n)] = min(median.get((target, n), p50), p50)  # the better of the two passes
    for target in tools:
        print(
            f"{target:8} progress: p50 {median[(target, 0)] * 1000:6.2f} ms with no notice, "
            f"{median[(target, notices)] * 1000:6.2f} ms with {notices}"
        )
    direct = median[("direct", notices)] - median[("direct", 0)]
    gateway = median[("gateway", notices)] - median[("gateway", 0)]
    print(f"progress relay: {(gateway - direct) / notices * 1000:.3f} ms added per relayed notification (goal < 1 ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="length of one measured round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per target (alternating)")
    parser.add_argument("--concurrency", type=int, default=16, help="open connections of the load generator")
    parser.add_argument("--notices", type=int, default=50, help="progress notifications per call in the relay phase")
    parser.add_argument("--progress-calls", type=int, default=20, help="calls per target and n in the relay phase")
    parser.add_argument(
        "--mode",
        default="auto",
        choices=MODES,
        help="the protocol generation of the calls: auto (2026-07-28 requests) or legacy (2025-11-25 sessions)",
    )
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="errcatalog-gateway-bench-"))
    env = server_env(folder, LOG_LEVEL="WARNING", BENCH_BARE_LOG_LEVEL="WARNING")
    servers = []
    try:
        token = prepare_data_dir(env, "gateway-bench")
        ports = {"direct": free_port(), "gateway": free_port(), "progress": free_port()}
        upstream_log = folder / "upstream.log"
        servers.append(start_server("bench.bare_server:app", ports["direct"], env, upstream_log, True, SHARED_CPU))
        wait_ready(ports["direct"], token, "bare", servers[0], upstream_log)
        progress_log = folder / "progress.log"
        servers.append(
            start_server("bench.bare_server:progress_app", ports["progress"], env, progress_log, True, SHARED_CPU)
        )
        servers_file = folder / "servers.json"
        upstream = {"type": "http", "url": f"http://127.0.0.1:{ports['direct']}/mcp"}
        progress = {"type": "http", "url": f"http://127.0.0.1:{ports['progress']}/mcp"}
        servers_file.write_text(json.dumps({"mcpServers": {"up": upstream, "prog": progress}}))
        manage(env, "upstream_import", str(servers_file))
        ours = start_server("config.asgi:application", ports["gateway"], env, folder / "ours.log", True, GATEWAY_CPU)
        servers.append(ours)
        deadline = time.monotonic() + 60
        while True:  # the gateway lists the upstream's tools once it has connected
            try:
                stats = _load(ports["gateway"], token, 0.2, 1, args.mode, UPSTREAM_TOOL)
                if stats["latencies"] and not stats["errors"]:
                    break
            except subprocess.CalledProcessError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the gateway did not serve {UPSTREAM_TOOL}:\n{(folder / 'ours.log').read_text()}")
            time.sleep(0.5)

        tools = {"direct": None, "gateway": UPSTREAM_TOOL}
        for target in tools:  # warm-up
            _load(ports[target], token, 1.0, args.concurrency, args.mode, tools[target])
        results: dict[str, list[dict]] = {target: [] for target in tools}
        alone: dict[str, list[dict]] = {target: [] for target in tools}
        gateway_cpu = gateway_calls = 0.0
        for round_number in range(args.rounds):
            order = list(tools) if round_number % 2 == 0 else list(reversed(tools))
            for target in order:
                before = _cpu_seconds(ours.pid)
                run = _load(ports[target], token, args.seconds, args.concurrency, args.mode, tools[target])
                results[target].append(run)
                if target == "gateway":
                    gateway_cpu += _cpu_seconds(ours.pid) - before
                    gateway_calls += len(run["latencies"])
                alone[target].append(_load(ports[target], token, args.seconds / 2, 1, args.mode, tools[target]))

        summary = {}
        for target, runs in results.items():
            latencies = sorted(x for run in runs for x in run["latencies"])
            answered = sum(len(run["latencies"]) - run["errors"] for run in runs)
            errors = sum(run["errors"] for run in runs) + sum(run["errors"] for run in alone[target])
            rate = answered / sum(run["elapsed"] for run in runs)
            single = percentile(sorted(x for run in alone[target] for x in run["latencies"]), 0.5)
            summary[target] = {"rate": rate, "p50": percentile(latencies, 0.5), "single": single}
            print(
                f"{target:8} {rate:8.0f} req/s   p50 {summary[target]['p50'] * 1000:6.2f} ms   "
                f"p99 {percentile(latencies, 0.99) * 1000:6.2f} ms   p50 alone {single * 1000:5.2f} ms   "
                f"wrong answers {errors}"
            )
            sample = next((run["sample"] for run in (*runs, *alone[target]) if "sample" in run), None)
            if sample is not None:
                print(f"  {target}: e.g. {sample}")
        ratio = summary["gateway"]["rate"] / summary["direct"]["rate"]
        added = (summary["gateway"]["single"] - summary["direct"]["single"]) * 1000
        print(
            f"gateway/direct: throughput {ratio:.2f}x (goal >= 0.7x), p50 added {added:.2f} ms (goal <= 1 ms), "
            f"gateway CPU {gateway_cpu / max(gateway_calls, 1) * 1000:.2f} ms per forwarded call"
        )
        _progress_relay(
            {
                "direct": f"http://127.0.0.1:{ports['progress']}/mcp",
                "gateway": f"http://127.0.0.1:{ports['gateway']}/mcp",
            },
            token,
            args.notices,
            args.progress_calls,
            args.mode,
        )
    finally:
        for server in reversed(servers):  # the gateway first: it holds connections open to the upstream
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

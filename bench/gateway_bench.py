"""A tool called through the gateway against the same upstream called directly, interleaved in one run.

    .venv/bin/python bench/gateway_bench.py [--seconds 4] [--rounds 4] [--concurrency 16]

The upstream is ``bench.bare_server:app`` (an SDK ``MCPServer``, Streamable HTTP, JSON responses, stateless).
"direct" calls its ``echo``; "gateway" calls ``up__echo`` on our endpoint (``config.asgi:application``,
production mode, a real token), which forwards it over its one session to the same upstream. Both are raw
2026-07-28 ``tools/call`` POSTs from ``bench/mcp_bench.py``'s load generator, in its own process, with rounds
alternating and the order flipping each round. The servers share CPU 0 and the load generator has CPU 1, so
the gateway's rounds pay for both processes, as they would on a two-core host. Reported: requests/s, p50 and
p99 per target, the throughput ratio gateway/direct (goal >= 0.7x) and the p50 the gateway adds (goal <= 1 ms).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.mcp_bench import free_port, manage, percentile, server_env, start_server, wait_ready

UPSTREAM_TOOL = "up__echo"


def _load(port: int, token: str, seconds: float, concurrency: int, tool: str | None) -> dict:
    command = [sys.executable, str(Path(__file__).with_name("mcp_bench.py")), "--load", str(port), token, "bare",
               "success", str(seconds), str(concurrency), "1", *([tool] if tool else [])]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603 (fixed arguments)
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="length of one measured round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per target (alternating)")
    parser.add_argument("--concurrency", type=int, default=16, help="open connections of the load generator")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="errcatalog-gateway-bench-"))
    env = server_env(folder, LOG_LEVEL="WARNING", BENCH_BARE_LOG_LEVEL="WARNING")
    servers = []
    try:
        manage(env, "migrate", "--noinput")
        manage(env, "catalog_load_defaults")
        manage(env, "shell", "-c", "from django.contrib.auth.models import User; User.objects.create_user('bench')")
        token = manage(env, "token_create", "--user", "bench", "--name", "gateway-bench")
        ports = {"direct": free_port(), "gateway": free_port()}
        servers.append(start_server("bench.bare_server:app", ports["direct"], env, folder / "upstream.log", True))
        wait_ready(ports["direct"], token, "bare", servers[0], folder / "upstream.log")
        servers_file = folder / "servers.json"
        upstream = {"type": "http", "url": f"http://127.0.0.1:{ports['direct']}/mcp"}
        servers_file.write_text(json.dumps({"mcpServers": {"up": upstream}}))
        manage(env, "upstream_import", str(servers_file))
        servers.append(start_server("config.asgi:application", ports["gateway"], env, folder / "ours.log", True))
        deadline = time.monotonic() + 60
        while True:  # the gateway lists the upstream's tools once it has connected
            try:
                stats = _load(ports["gateway"], token, 0.2, 1, UPSTREAM_TOOL)
                if stats["latencies"] and not stats["errors"]:
                    break
            except subprocess.CalledProcessError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the gateway did not serve {UPSTREAM_TOOL}:\n{(folder / 'ours.log').read_text()}")
            time.sleep(0.5)

        tools = {"direct": None, "gateway": UPSTREAM_TOOL}
        for target in tools:  # warm-up
            _load(ports[target], token, 1.0, args.concurrency, tools[target])
        results: dict[str, list[dict]] = {target: [] for target in tools}
        for round_number in range(args.rounds):
            order = list(tools) if round_number % 2 == 0 else list(reversed(tools))
            for target in order:
                results[target].append(_load(ports[target], token, args.seconds, args.concurrency, tools[target]))

        summary = {}
        for target, runs in results.items():
            latencies = sorted(x for run in runs for x in run["latencies"])
            answered = sum(len(run["latencies"]) - run["errors"] for run in runs)
            errors = sum(run["errors"] for run in runs)
            rate = answered / sum(run["elapsed"] for run in runs)
            summary[target] = {"rate": rate, "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)}
            print(
                f"{target:8} {rate:8.0f} req/s   p50 {summary[target]['p50'] * 1000:6.2f} ms   "
                f"p99 {summary[target]['p99'] * 1000:6.2f} ms   wrong answers {errors}"
            )
        ratio = summary["gateway"]["rate"] / summary["direct"]["rate"]
        added = (summary["gateway"]["p50"] - summary["direct"]["p50"]) * 1000
        print(f"gateway/direct: throughput {ratio:.2f}x (goal >= 0.7x), p50 added {added:.2f} ms (goal <= 1 ms)")
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Cost of outcome recording: ``recorder.record()`` alone, and a tools/call with recording on vs off (same run).

    .venv/bin/python bench/recording_bench.py [--redis-url redis://127.0.0.1:6379/0] [--calls 1000000]
        [--seconds 3] [--rounds 6] [--concurrency 1] [--no-pin]

Needs Redis (the recorder's buffer). Everything written goes to a stream key unique to this run, deleted at the end.

(a) ``record()`` in this process, Django set up with the project's settings, recording on into Redis with the
    background flusher really sending (so the cost includes sharing the GIL with it): ``--calls`` calls, each timed
    with ``perf_counter_ns``; median and p99 in ns, the timer's own cost measured and shown apart. The same with
    recording off (``OUTCOMES["ENABLED"]`` false: the settings check only).
(b) The MCP endpoint (``bench/mcp_bench.py``'s servers, tools and load generator, imported, not copied): two
    ``config.asgi:application`` uvicorn servers from the same data dir and the same ``REDIS_URL``, one with
    ``ERRCATALOG_OUTCOMES=1`` and one with ``=0``. Rounds alternate between them (order flipped every round), per
    case; reported per case: p50/p99 latency and requests/s of each, the p50 difference in µs (goal < 100 µs) and
    its range over the rounds (noise). At the end the recording server's stream is counted against the calls it
    served: every call must have left exactly one event.
    Concurrency 1 by default: the latency of a lone call. Under concurrency c a call also waits for c-1 others,
    so a per-call cost shows up about c times in the p50.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import mcp_bench  # noqa: E402  (mcp_bench's helpers: servers, load generator, right answers)

GOAL_US = 100.0
EVENT_POOL = 10_000  # distinct events cycled through in (a): a million live objects would measure the allocator


# --- (a) record() in process ------------------------------------------------------------------------------------


def _setup_django(data_dir: Path, redis_url: str, stream_key: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        ERRCATALOG_DATA_DIR=str(data_dir),
        ERRCATALOG_DEBUG="0",
        SECRET_KEY="recording-bench-" + os.urandom(32).hex(),  # production refuses keys under 50 characters
        REDIS_URL=redis_url,
        ERRCATALOG_OUTCOMES="1",
        ERRCATALOG_OUTCOMES_STREAM=stream_key,
    )
    import django

    django.setup()


def _timer_overhead_ns(samples: int) -> int:
    clock = time.perf_counter_ns
    costs = array("q", bytes(8 * samples))
    for i in range(samples):
        started = clock()
        costs[i] = clock() - started
    return int(statistics.median(costs))


def _time_record(calls: int) -> array:
    from errcatalog.outcomes import recorder
    from errcatalog.outcomes.events import OutcomeEvent

    events = [
        OutcomeEvent(tool="echo", outcome="ok", client="token:1", session=f"s{n % 97}", latency_ms=1.5)
        for n in range(EVENT_POOL)
    ]
    record, clock = recorder.record, time.perf_counter_ns
    costs = array("q", bytes(8 * calls))
    for i in range(calls):
        event = events[i % EVENT_POOL]
        started = clock()
        record(event)
        costs[i] = clock() - started
    return costs


def _percentiles(costs: array) -> tuple[int, int]:
    ordered = sorted(costs)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def bench_record(calls: int) -> list[tuple[str, int, int]]:
    """Rows (label, median ns, p99 ns) for record() on and off, plus the timer alone."""
    from django.conf import settings

    from errcatalog.outcomes import recorder

    overhead = _timer_overhead_ns(100_000)
    _time_record(10_000)  # warm up: starts the flusher thread, sizes the buffer
    on = _time_record(calls)
    recorder.flush(timeout=30)
    stats = recorder.stats()
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": False}
    off = _time_record(calls)
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": True}
    print(
        f"  recorder after (a): recorded {stats.recorded}, sent {stats.sent}, dropped {stats.dropped}, "
        f"held {stats.held}"
    )
    return [
        ("record(), recording on (Redis)", *_percentiles(on)),
        ("record(), recording off", *_percentiles(off)),
        ("perf_counter_ns pair (timer alone)", overhead, overhead),
    ]


# --- (c) the call pipeline in process, recording on vs off ----------------------------------------------------

PIPELINE_CASES = {
    # case: (tool, arguments) from the built-in catalog toolset
    "success": ("explain_error", {"code": "NETWORK_ERROR"}),
    "unknown tool": ("explain_eror", {}),
    "missing arg": ("explain_error", {}),
}


def bench_pipeline(calls: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Median µs of one ``call_tool`` per case with recording on and off, in interleaved rounds (flusher live)."""
    import asyncio

    from django.conf import settings
    from django.core.management import call_command

    from errcatalog.outcomes import recorder
    from mcpserver.calls import ToolCall
    from mcpserver.pipeline import call_tool
    from mcpserver.registry import autodiscover

    autodiscover()
    logging.disable(logging.WARNING)  # the pipeline logs each user error; the log is not what is measured
    call_command("migrate", verbosity=0)
    call_command("catalog_load_defaults", stdout=open(os.devnull, "w"))  # noqa: SIM115
    settings.MCP = {**settings.MCP, "TOOLSETS": frozenset({"catalog"})}

    async def timed(tool: str, arguments: dict, count: int) -> list[int]:
        clock, costs = time.perf_counter_ns, []
        for _ in range(count):
            call = ToolCall(tool, dict(arguments), None, "bench-session", "2026-07-28")
            started = clock()
            await call_tool(call)
            costs.append(clock() - started)
        return costs

    samples = {(case, mode): [] for case in PIPELINE_CASES for mode in ("on", "off")}
    for tool, arguments in PIPELINE_CASES.values():
        asyncio.run(timed(tool, arguments, 2000))  # warm up: snapshot, render cache, flusher
    for _ in range(rounds):
        for mode in ("on", "off"):
            settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": mode == "on"}
            for case, (tool, arguments) in PIPELINE_CASES.items():
                samples[case, mode] += asyncio.run(timed(tool, arguments, calls))
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": True}
    recorder.flush(timeout=30)
    return {
        case: (statistics.median(samples[case, "on"]) / 1000, statistics.median(samples[case, "off"]) / 1000)
        for case in PIPELINE_CASES
    }


# --- (b) the endpoint, recording on vs off ------------------------------------------------------------------------


def bench_endpoint(args, data_dir: Path, redis_url: str, stream_key: str, pin: bool) -> int:
    env = mcp_bench.server_env(
        data_dir, REDIS_URL=redis_url, ERRCATALOG_OUTCOMES_STREAM=stream_key, LOG_LEVEL="CRITICAL"
    )
    mcp_bench.manage(env, "migrate", "--noinput")
    mcp_bench.manage(env, "catalog_load_defaults")
    mcp_bench.manage(env, "shell", "-c", "from django.contrib.auth.models import User; User.objects.create_user('b')")
    token = mcp_bench.manage(env, "token_create", "--user", "b", "--name", "recording-bench")

    targets = ("on", "off")
    ports = {target: mcp_bench.free_port() for target in targets}
    logs = {target: data_dir / f"{target}.log" for target in targets}
    servers: dict[str, subprocess.Popen] = {}
    warmup_calls = dict.fromkeys(targets, 0)
    results: dict = {}
    try:
        for target in targets:
            server_env = {**env, "ERRCATALOG_OUTCOMES": "1" if target == "on" else "0"}
            servers[target] = mcp_bench.start_server("config.asgi:application", ports[target], server_env,
                                                     logs[target], pin)  # fmt: skip
        for target in targets:
            mcp_bench.wait_ready(ports[target], token, "ours", servers[target], logs[target])
            for case in mcp_bench.CASES:
                ok, answer = mcp_bench.probe(ports[target], token, "ours", case)
                if not ok:
                    raise SystemExit(f"recording {target}: unexpected answer for {case}: {answer}")
        print(
            f"\n(b) tools/call over HTTP ({mcp_bench.PROTOCOL}), concurrency {args.concurrency}, {args.rounds} rounds "
            f"x {args.seconds:g} s per case and server, interleaved{', servers on CPU 0, load on CPU 1' if pin else ''}"
        )
        for case in mcp_bench.CASES:
            for target in targets:
                warmup = mcp_bench.run_load(ports[target], token, "ours", case, args.warmup, args.concurrency, pin)
                warmup_calls[target] += len(warmup["latencies"])
        results = {(t, c): [] for t in targets for c in mcp_bench.CASES}
        for round_no in range(args.rounds):
            order = targets if round_no % 2 == 0 else tuple(reversed(targets))
            for case in mcp_bench.CASES:
                for target in order:
                    cpu_before = _cpu_ns(servers[target].pid)
                    stats = mcp_bench.run_load(ports[target], token, "ours", case, args.seconds, args.concurrency, pin)
                    stats["cpu_ns"] = _cpu_ns(servers[target].pid) - cpu_before
                    results[target, case].append(stats)
                    if stats["errors"]:
                        print(f"  recording {target} {case}: {stats['errors']} wrong answers: {stats.get('sample')}")
        _print_endpoint_table(results)
    finally:
        for process in servers.values():
            process.terminate()  # uvicorn's lifespan shutdown flushes what the recorder still holds
        for process in servers.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
    # Every call the recording server answered left one event: the readiness probe, one probe per case, the
    # warm-ups and the measured rounds.
    measured = sum(len(stats["latencies"]) for (t, _case), runs in results.items() if t == "on" for stats in runs)
    return 1 + len(mcp_bench.CASES) + warmup_calls["on"] + measured


def _print_endpoint_table(results: dict) -> None:
    print(
        f"\n  {'case':12s} {'recording':9s} {'req/s':>8s} {'CPU µs/call':>11s} {'p50 µs':>9s} {'p99 µs':>9s}   "
        f"{'p50 on-off':>11s}  rounds (µs)"
    )
    cpu_differences = []
    for case in mcp_bench.CASES:
        p50, cpu = {}, {}
        for target in ("on", "off"):
            runs = results[target, case]
            latencies = sorted(x for r in runs for x in r["latencies"])
            rate = sum(len(r["latencies"]) - r["errors"] for r in runs) / sum(r["elapsed"] for r in runs)
            p50[target] = mcp_bench.percentile(latencies, 0.5) * 1e6
            cpu[target] = _cpu_per_call_us(runs)
            line = (
                f"  {case:12s} {target:9s} {rate:8.0f} {cpu[target]:11.1f} {p50[target]:9.1f} "
                f"{mcp_bench.percentile(latencies, 0.99) * 1e6:9.1f}"
            )
            if target == "off":
                per_round = [
                    (_p50(a) - _p50(b)) * 1e6 for a, b in zip(results["on", case], results["off", case], strict=True)
                ]
                difference = p50["on"] - p50["off"]
                flag = "ok" if difference < GOAL_US else "ABOVE GOAL"
                line += (
                    f"   {difference:+9.1f} µs {flag} ({min(per_round):+.1f} .. {max(per_round):+.1f}, "
                    f"median {statistics.median(per_round):+.1f})"
                )
                cpu_differences.append(cpu["on"] - cpu["off"])
            print(line)
    print(
        "\n  server CPU per call, recording on minus off: "
        + ", ".join(f"{case} {d:+.1f} µs" for case, d in zip(mcp_bench.CASES, cpu_differences, strict=True))
        + " (all threads of the server process, flusher included)"
    )
    print(f"  goal: recording adds < {GOAL_US:g} µs to a call's p50")


def _cpu_ns(pid: int) -> int:
    """CPU time the server process used so far, all threads (the recorder's flusher too), in ns (Linux)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that just ended
            continue
    return total


def _cpu_per_call_us(runs: list[dict]) -> float:
    return sum(r["cpu_ns"] for r in runs) / max(1, sum(len(r["latencies"]) for r in runs)) / 1000


def _p50(stats: dict) -> float:
    return mcp_bench.percentile(sorted(stats["latencies"]), 0.5)


def _count_stream(redis_url: str, stream_key: str) -> int:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        return client.xlen(stream_key)
    finally:
        client.close()


def _delete_stream(redis_url: str, stream_key: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        client.delete(stream_key)
    finally:
        client.close()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--load":  # mcp_bench's load generator re-enters through its own file
        return mcp_bench.load_main(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    parser.add_argument("--calls", type=int, default=1_000_000, help="record() calls timed in (a)")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one measured round in (b)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per case and server in (b)")
    parser.add_argument("--concurrency", type=int, default=1, help="open connections of the load generator")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of unmeasured load per case and server")
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers and load generators to CPUs")
    parser.add_argument("--pipeline-calls", type=int, default=5000, help="call_tool calls per case and round in (c)")
    parser.add_argument("--skip-endpoint", action="store_true", help="run (a) and (c) only")
    args = parser.parse_args()
    pin = not args.no_pin and (os.cpu_count() or 1) >= 2

    data_dir = Path(tempfile.mkdtemp(prefix="errcatalog-recording-bench-"))
    record_stream = f"errcatalog:outcomes:bench:{uuid.uuid4().hex[:8]}"
    endpoint_stream = f"{record_stream}:endpoint"
    try:
        _setup_django(data_dir / "a", args.redis_url, record_stream)
        print(f"(a) recorder.record() in process, {args.calls:,} calls, Redis {args.redis_url.split('@')[-1]}")
        rows = bench_record(args.calls)
        print(f"\n  {'what':38s} {'median ns':>10s} {'p99 ns':>10s}")
        for label, median, p99 in rows:
            print(f"  {label:38s} {median:10d} {p99:10d}")
        print(
            f"\n(c) mcpserver.pipeline.call_tool in process, {args.rounds} rounds x {args.pipeline_calls:,} calls "
            "per case, recording on and off interleaved, flusher sending to Redis"
        )
        print(f"\n  {'case':14s} {'on p50 µs':>10s} {'off p50 µs':>11s} {'on-off µs':>10s}")
        for case, (on, off) in bench_pipeline(args.pipeline_calls, args.rounds).items():
            verdict = "ok" if on - off < GOAL_US else "ABOVE GOAL"
            print(f"  {case:14s} {on:10.1f} {off:11.1f} {on - off:+10.1f}  {verdict}")
        if args.skip_endpoint:
            return 0
        served = bench_endpoint(args, data_dir / "b", args.redis_url, endpoint_stream, pin)
        stored = _count_stream(args.redis_url, endpoint_stream)
        print(f"  recording server: {served} calls answered, {stored} events in the stream "
              f"({'none lost' if stored == served else 'MISMATCH'})")  # fmt: skip
        return 0
    finally:
        _delete_stream(args.redis_url, record_stream)
        _delete_stream(args.redis_url, endpoint_stream)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())

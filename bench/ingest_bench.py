"""Sustained ingest rate: real Redis stream → real Celery worker processes → PostgreSQL, zero loss checked by count.

    .venv/bin/python bench/ingest_bench.py [--events 400000] [--workers 1,2] [--partitions 4] [--batch 2000]

Uses its own database (``errcatalog_ingest_bench`` on ``BENCH_PG``, default ``postgres://postgres@127.0.0.1:5432``),
dropped, recreated and migrated, and its own Redis database (``BENCH_REDIS``, default
``redis://127.0.0.1:6379/13``), emptied. It XADDs the events in the recorder's wire format into their partitions'
streams first (not timed), starts ``--workers`` real ``celery -A config worker --pool=solo`` processes, then sends
``errcatalog.drain_outcomes`` once a second as beat does and times from the first send until every event is in
PostgreSQL. ``--workers 1,2`` runs once per count (each on a fresh database and stream) and prints the ratio of
the rates. The data: 200 clients calling 10 tools; 15 % of calls fail and are retried by the same client 1-5
times, 60 % of those episodes recovering. One drainer per partition at a time: up to ``--partitions`` workers
drain at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SERVER = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
REDIS = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/13")
DATABASE = "errcatalog_ingest_bench"


def create_database() -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {DATABASE}")


def setup_django(batch: int, partitions: int) -> None:
    os.environ.update(
        DATABASE_URL=f"{SERVER}/{DATABASE}",
        REDIS_URL=REDIS,
        CELERY_BROKER_URL=REDIS,
        ERRCATALOG_OUTCOMES_BATCH=str(batch),
        ERRCATALOG_OUTCOMES_PARTITIONS=str(partitions),
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    import django

    django.setup()


def migrate() -> None:
    from django.core.management import call_command
    from django.db import connection

    connection.close()  # the database was just dropped and made again
    call_command("migrate", verbosity=0)


def make_events(count: int, seed: int = 4) -> list:
    """Calls over the last hour in time order: errors followed by their retries from the same client."""
    from errcatalog.outcomes.events import OutcomeEvent

    rng = random.Random(seed)
    start = time.time() - 3600
    step = 3000 / count
    events: list[OutcomeEvent] = []
    while len(events) < count:
        ts = start + len(events) * step
        tool, client = f"tool_{rng.randrange(10)}", f"token:{rng.randrange(200)}"
        if rng.random() >= 0.15:
            events.append(OutcomeEvent(tool=tool, client=client, outcome="ok", ts=ts, latency_ms=rng.expovariate(0.05)))
            continue
        code, variant = f"E_{rng.randrange(5)}", rng.choice(("default", "friendly"))
        recovers = rng.random() < 0.6
        for attempt in range(rng.randint(1, 5) + 1):
            last = attempt > 0 and recovers and rng.random() < 0.5
            outcome = "ok" if last else "error"
            fields = {} if last else {"code": code, "variant": variant, "interactive": rng.random() < 0.8}
            latency = rng.expovariate(0.05)
            events.append(
                OutcomeEvent(
                    tool=tool, client=client, outcome=outcome, ts=ts + attempt * 0.01, latency_ms=latency, **fields
                )
            )
            if last:
                break
    return events[:count]


def fill_stream(events: list) -> float:
    import redis
    from django.conf import settings

    from errcatalog.outcomes import ingest, partitions
    from errcatalog.outcomes.episodes import event_key

    client = redis.Redis.from_url(REDIS)
    client.flushdb()
    outcomes = settings.OUTCOMES
    base, count = outcomes["STREAM_KEY"], outcomes["PARTITIONS"]
    started = time.perf_counter()
    for offset in range(0, len(events), 10_000):
        with client.pipeline(transaction=False) as pipe:
            for event in events[offset : offset + 10_000]:
                key = partitions.stream_key(base, partitions.partition(event_key(event), count))
                pipe.xadd(key, {"e": event.to_json()}, maxlen=outcomes["STREAM_MAXLEN"])
            pipe.execute()
    waiting = ingest.backlog(client)
    assert sum(waiting.values()) == len(events), "a stream trimmed events: raise STREAM_MAXLEN"
    print("  per partition: " + ", ".join(f"{n:,}" for n in waiting.values()))
    return time.perf_counter() - started


def start_workers(count: int, logs: Path) -> list[subprocess.Popen]:
    celery = str(Path(sys.executable).with_name("celery"))
    workers = []
    for n in range(count):
        log = logs / f"ingest-bench-worker-{n}.log"
        log.write_bytes(b"")
        command = [celery, "-A", "config", "worker", "--pool=solo", "-l", "warning", "-n", f"bench{n}@%h",
                   "--without-gossip", "--without-mingle", "--without-heartbeat"]  # fmt: skip
        env = {**os.environ, "DATABASE_CONN_MAX_AGE": "600"}
        workers.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT))  # noqa: S603
    return workers


def stored_count() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM errcatalog_outcomeevent")
        return cursor.fetchone()[0]


def measure(total: int, timeout: float, workers: int) -> tuple[float, list[tuple[float, int]]]:
    """Send drains once a second until every event is stored; returns the elapsed time and (time, count) samples."""
    from config.celery import app
    from errcatalog.outcomes.tasks import drain_outcomes

    # Workers must be consuming before the clock starts: a ping answered by each means they are.
    wait_start = time.monotonic()
    while len(app.control.ping(timeout=1.0)) < workers:
        if time.monotonic() - wait_start > 60:
            raise SystemExit("no worker answered")
    started = time.perf_counter()
    WORKER_CPU_AT_START.update({pid: cpu_seconds(pid) for pid in WORKER_PIDS})
    samples: list[tuple[float, int]] = []
    next_send = started
    count = 0
    while count < total:
        now = time.perf_counter()
        if now >= next_send:
            drain_outcomes.delay()
            next_send = now + 1.0
        if now - started > timeout:
            raise SystemExit(f"timed out with {count:,} of {total:,} events stored")
        time.sleep(0.2)
        count = stored_count()
        sample_backends()
        samples.append((time.perf_counter() - started, count))
    return time.perf_counter() - started, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--workers", default="1,2", help="worker counts to run, one run each (e.g. 1,2)")
    parser.add_argument("--partitions", type=int, default=4, help="ERRCATALOG_OUTCOMES_PARTITIONS")
    parser.add_argument("--batch", type=int, default=2000, help="ERRCATALOG_OUTCOMES_BATCH for the workers")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    counts = [int(count) for count in args.workers.split(",")]

    setup_django(args.batch, args.partitions)
    events = make_events(args.events)
    print(
        f"{len(events):,} events ({sum(e.outcome == 'error' for e in events):,} errors), {args.partitions} partitions"
    )
    rates: dict[int, float] = {}
    for workers in counts:
        print(f"--- {workers} worker(s)")
        rates[workers] = run(events, workers, args)
    if len(rates) > 1:
        one = rates[counts[0]]
        print(
            " | ".join(
                f"{workers} worker(s): {rate:,.0f} events/s ({rate / one:.2f}x)" for workers, rate in rates.items()
            )
        )


def run(events: list, workers: int, args: argparse.Namespace) -> float:
    """One timed run on a fresh database and stream; returns the sustained rate."""
    create_database()
    migrate()
    print(f"  XADD (pipelined) in {fill_stream(events):.1f} s")
    logs = ROOT / "var" / "log"
    logs.mkdir(parents=True, exist_ok=True)
    processes = start_workers(workers, logs)
    WORKER_PIDS[:] = [process.pid for process in processes]
    BACKEND_CPU.clear()
    try:
        elapsed, samples = measure(len(events), args.timeout, workers)
        used = sum(cpu_seconds(process.pid) - WORKER_CPU_AT_START[process.pid] for process in processes)
        cpu = {"workers": used, "postgres": sum(BACKEND_CPU.values())}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
    sustained = report(events, elapsed, samples, workers)
    print_cpu(len(events), cpu)
    return sustained


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# Workers' CPU time when the clock starts (their start-up is not ingest work).
WORKER_PIDS: list[int] = []
WORKER_CPU_AT_START: dict[int, float] = {}
# CPU seconds of each PostgreSQL backend that served a worker, as last sampled. Celery's Django fixup closes the
# database connection after every task, so backends come and go: ``sample_backends`` runs with each poll.
BACKEND_CPU: dict[int, float] = {}


def sample_backends() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        pids = [pid for (pid,) in cursor.fetchall()]
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            BACKEND_CPU[pid] = cpu_seconds(pid)


def print_cpu(count: int, cpu: dict[str, float]) -> None:
    # The machine may be shared with other work: CPU time per event says what an idle one would do. Even with
    # no overlap at all between the worker and PostgreSQL, the rate would be count / (worker + PostgreSQL CPU).
    per_event = {name: seconds / count * 1e6 for name, seconds in cpu.items()}
    total = sum(cpu.values())
    print(
        f"  CPU per event: worker {per_event['workers']:.0f} µs, PostgreSQL {per_event['postgres']:.0f} µs "
        f"(no overlap at all would still give {count / total:,.0f} events/s on idle cores)"
    )


def report(events: list, elapsed: float, samples: list[tuple[float, int]], workers: int) -> float:
    import redis
    from django.conf import settings
    from django.db.models import Count

    from errcatalog.outcomes import ingest
    from errcatalog.outcomes.models import Episode, OutcomeRecord

    stored = OutcomeRecord.objects.count()
    distinct = OutcomeRecord.objects.filter(id__in=[event.id for event in events[:: max(1, len(events) // 1000)]])
    client = redis.Redis.from_url(REDIS)
    outcomes = settings.OUTCOMES
    pending = sum(client.xpending(key, outcomes["STREAM_GROUP"])["pending"] for key in ingest.backlog(client))
    # Sustained rate: the middle of the run, without the first drain's start-up and the last partial batch.
    lo = next(c for t, c in samples if c >= 0.1 * len(events))
    lo_t = next(t for t, c in samples if c >= 0.1 * len(events))
    hi_t, hi = next((t, c) for t, c in samples if c >= 0.9 * len(events))
    sustained = (hi - lo) / (hi_t - lo_t) if hi_t > lo_t else float("nan")
    endings = dict(Episode.objects.values_list("ending").annotate(n=Count("pk")).values_list("ending", "n"))
    print(f"  workers: {workers}, batch: {outcomes['BATCH_SIZE']}")
    overall = len(events) / elapsed
    print(f"  stored {stored:,} of {len(events):,} events in {elapsed:.1f} s: {overall:,.0f} events/s overall")
    print(f"  sustained (10 %→90 % of the events): {sustained:,.0f} events/s")
    print(f"  zero loss: {'yes' if stored == len(events) else 'NO'}; sampled ids found: {distinct.count()}")
    left = sum(ingest.backlog(client).values())
    print(f"  streams left: {left} entries, {pending} pending; episodes: {endings}")
    print(f"  load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return sustained


if __name__ == "__main__":
    main()

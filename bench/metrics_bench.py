"""Metrics API and dashboard response times with a million outcome events in PostgreSQL: rollups keep them flat.

    .venv/bin/python bench/metrics_bench.py [--events 1000000] [--days 30] [--requests 20]

Uses its own database (``BENCH_DATABASE``, default ``errcatalog_bench``, on ``BENCH_PG``, default
``postgres://postgres@127.0.0.1:5432``), dropped and recreated, then migrated. It generates the events and their
episodes inside PostgreSQL (``INSERT … SELECT`` over ``generate_series``), computes every rollup bucket with
``rollups.compute_due`` (timed), then times ``GET /api/v1/metrics/`` and ``GET /dashboard/`` through Django's test
client as a staff user for each window, p50/p95 over ``--requests`` requests: cold (the metrics cache emptied
before each, so every request reads the rollups) and warm (the result cached for the current generation of the
rollups, or of the events for the 1-hour window). The 1-hour window reads the last hour's events themselves in
minute buckets: its cost grows with the events of an hour, so ``--days 1`` (a million events a day, about 42,000
an hour) is the figure to watch for it. The data: 6 tools with 3 codes each, 2 variants per code (one recovering
more often), 8 clients, 15 % errors, log-normal latencies around 20 ms, inserted in time order as ingest writes
them (so an hour's events share table pages).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SERVER = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DATABASE = os.environ.get("BENCH_DATABASE", "errcatalog_bench")
WINDOWS = ("1h", "24h", "7d", "30d")

EVENTS_SQL = """
INSERT INTO errcatalog_outcomeevent
    (id, occurred_at, source, tool, client, session, outcome, code, variant, interactive, elicitation, attempt,
     latency_ms, sentry_event_id, episode_id, ingested_at, locale, upstream, trace_id)
SELECT md5('e' || i)::uuid, at,
       'mcp', 'tool_' || t, 'token:' || c, '', CASE WHEN err THEN 'error' ELSE 'ok' END,
       CASE WHEN err THEN 'CODE_' || t || '_' || k ELSE '' END,
       CASE WHEN err THEN (CASE WHEN random() < 0.5 THEN 'friendly' ELSE 'default' END) ELSE '' END,
       err AND random() < 0.7, '', CASE WHEN random() < 0.1 THEN 1 + (i %% 3) ELSE 0 END,
       exp(ln(20) + 0.9 * (random() + random() + random() + random() - 2) * 2), '', NULL,
       at + interval '1 second', '', '', ''
FROM (SELECT i, floor(random() * 6)::int AS t, floor(random() * 8)::int AS c, floor(random() * 3)::int AS k,
             random() < 0.15 AS err, now() - random() * interval '%(days)s days' AS at
      FROM generate_series(1, %(events)s) AS i) AS g
ORDER BY at
"""

EPISODES_SQL = """
INSERT INTO errcatalog_episode
    (tool, client, session, code, variant, interactive, sentry_event_id, started_at, last_at, ended_at, retries,
     recovered_at_attempt, ending, changed_at, upstream, resolution_seconds)
SELECT 'tool_' || t, 'token:' || c, 's' || i, 'CODE_' || t || '_' || k, v, random() < 0.7,
       md5('s' || i), s, s + interval '20 seconds', s + interval '10 minutes',
       CASE WHEN ending = 'abandoned' AND random() < 0.3 THEN 0 ELSE 1 + (i %% 3) END,
       CASE WHEN ending = 'recovered' THEN 1 + (i %% 3) END, ending, s + interval '10 minutes', '',
       CASE WHEN ending = 'recovered' THEN 5 + random() * 120 END
FROM (SELECT i, floor(random() * 6)::int AS t, floor(random() * 8)::int AS c, floor(random() * 3)::int AS k, v,
             now() - random() * interval '%(days)s days' AS s,
             CASE WHEN r < (CASE WHEN v = 'friendly' THEN 0.7 ELSE 0.55 END) THEN 'recovered'
                  WHEN r < 0.85 THEN 'exhausted' ELSE 'abandoned' END AS ending
      FROM (SELECT i, CASE WHEN random() < 0.5 THEN 'friendly' ELSE 'default' END AS v, random() AS r
            FROM generate_series(1, %(episodes)s) AS i) AS a) AS g
ORDER BY s
"""


def create_database() -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {DATABASE}")


def setup_django() -> None:
    os.environ["DATABASE_URL"] = f"{SERVER}/{DATABASE}"
    # The metrics cache of this process (locmem), not a Redis shared with anything else.
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def generate(events: int, days: int) -> float:
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(EVENTS_SQL % {"events": events, "days": days})
        cursor.execute(EPISODES_SQL % {"episodes": events // 10, "days": days})
        cursor.execute("ANALYZE errcatalog_outcomeevent; ANALYZE errcatalog_episode")
    return time.perf_counter() - started


def time_requests(requests: int, path: str) -> dict[str, dict[str, tuple[float, float]]]:
    """p50/p95 in ms per window: cold (the metrics cache emptied before each request) and warm."""
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    client = Client()
    client.force_login(user)
    client.get(f"{path}?window=1h")  # the first request of a process imports and warms the URLconf
    figures = {}
    for window in WINDOWS:
        url = f"{path}?window={window}"
        figures[window] = {}
        for label, clear in (("cold", True), ("warm", False)):
            durations = []
            for _ in range(requests):
                if clear:
                    cache.clear()
                started = time.perf_counter()
                response = client.get(url)
                durations.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, response.content[:300]
            durations.sort()
            p95 = durations[min(len(durations) - 1, round(0.95 * (len(durations) - 1)))]
            figures[window][label] = (statistics.median(durations), p95)
        if path.startswith("/api/"):
            figures[window]["calls"] = response.json()["totals"]["calls"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--reuse", action="store_true", help="keep the database of the last run; only time requests")
    args = parser.parse_args()

    if not args.reuse:
        create_database()
    setup_django()
    from django.db import connection

    from errcatalog.outcomes import rollups
    from errcatalog.outcomes.models import DailyRollup, OutcomeRecord, Rollup

    if not args.reuse:
        print(f"generating {args.events:,} events and {args.events // 10:,} episodes over {args.days} days …")
        print(f"  generated in {generate(args.events, args.days):.1f} s")
        started = time.perf_counter()
        buckets = rollups.compute_due()
        elapsed = time.perf_counter() - started
        print(f"rollups: {buckets} buckets in {elapsed:.1f} s (first run, all buckets)")
    with connection.cursor() as cursor:
        # What autovacuum would do after a bulk load: planner statistics for the new rollup rows.
        cursor.execute("ANALYZE errcatalog_rollup; ANALYZE errcatalog_rollupsummary")
    print(
        f"database: {OutcomeRecord.objects.count():,} events, {Rollup.objects.count():,} hourly and "
        f"{DailyRollup.objects.count():,} daily rollup rows"
    )
    started = time.perf_counter()
    buckets = rollups.compute_due()
    print(f"rollups: incremental run, {buckets} bucket(s) in {(time.perf_counter() - started) * 1000:.0f} ms")
    for path in ("/api/v1/metrics/", "/dashboard/"):
        print(f"GET {path}, {args.requests} requests per window and cache state (ms):")
        print(f"  {'window':>6} {'cold p50':>9} {'cold p95':>9} {'warm p50':>9} {'warm p95':>9} {'calls':>10}")
        for window, row in time_requests(args.requests, path).items():
            (cold50, cold95), (warm50, warm95) = row["cold"], row["warm"]
            calls = f"{row['calls']:,}" if "calls" in row else ""
            print(f"  {window:>6} {cold50:9.1f} {cold95:9.1f} {warm50:9.1f} {warm95:9.1f} {calls:>10}")
    print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

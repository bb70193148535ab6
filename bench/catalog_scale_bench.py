"""Catalog scale: import time, snapshot build time and memory by catalog size, and a loaded server across edits.

    .venv/bin/python bench/catalog_scale_bench.py [--sizes 100,1000,10000] [--seconds 6] [--rounds 2]
                                                   [--postgres postgres://postgres@127.0.0.1:5432] [--redis-url URL]

1. Per size (variants; 5 per code, on top of the default catalog), in a fresh interpreter and a fresh database:
   ``catalog_import`` of the whole document (validation included, the document's generation not), the build of the
   process's snapshot (revision + catalog read + ``CatalogSnapshot``; median of 5) and the memory the snapshot
   keeps (tracemalloc, after the build's garbage is collected). SQLite in a temporary folder; with ``--postgres``
   a scratch database on that server, dropped afterwards.
2. One uvicorn process serving the largest catalog (``bench.settings``, as ``bench/mcp_bench.py`` serves it), 16
   keep-alive connections of ``tools/call`` that fail upstream and are rendered from the catalog (SERVER_ERROR),
   in windows of ``--seconds``: without an edit; with one edit through the REST API (``PATCH /api/v1/codes/``,
   so the serving process rebuilds in its own thread) half way; with one edit committed by another process (SQL
   through its own connection, as a shell or ``psql`` would) half way. Windows alternate over ``--rounds``; the
   server on CPU 0, the load on CPU 1. Reported per kind of window: requests/s, p50, p99 and the slowest call,
   against the windows without an edit, and the snapshots the server built (``/health/``: one per edit).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mcp_bench import free_port, manage, percentile, server_env, start_server, wait_ready  # noqa: E402

VARIANTS_PER_CODE = 5
EDIT_CODE = "SERVER_ERROR"


# --- 1. One size, in a process of its own -----------------------------------------------------------------


def measure_size(variants: int) -> dict:
    """Import, build and memory at ``variants`` synthetic variants, in this (fresh) process."""
    import gc
    import tracemalloc

    import django

    django.setup()
    from django.core.management import call_command

    from errcatalog.catalog.revision import catalog_revision
    from errcatalog.catalog.services import catalog_import
    from errcatalog.catalog.snapshot import catalog_snapshot_from_db
    from errcatalog.render.entries import CatalogSnapshot
    from tests.errcatalog.catalog.synthetic import synthetic_document

    call_command("migrate", verbosity=0)
    document = synthetic_document(variants // VARIANTS_PER_CODE, VARIANTS_PER_CODE)
    started = time.perf_counter()
    summary = catalog_import(document)
    import_seconds = time.perf_counter() - started

    def build() -> CatalogSnapshot:
        # What a process does on a change, at full speed (a serving process paces it: see snapshot.BUILD_SHARE).
        return catalog_snapshot_from_db(version=f"revision {catalog_revision()[0]}")

    builds = []
    for _ in range(5):
        started = time.perf_counter()
        build()
        builds.append(time.perf_counter() - started)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    snapshot = build()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    total = sum(len(entry.variants) for entry in snapshot.codes.values())
    return {
        "variants": total,
        "rows": summary.created,
        "import_s": import_seconds,
        "build_ms": statistics.median(builds) * 1000,
        "memory_mb": kept / 2**20,
    }


@contextlib.contextmanager
def scratch_database(postgres: str | None, folder: Path) -> Iterator[dict[str, str]]:
    """The environment of a process on a database of its own: a SQLite file, or a scratch PostgreSQL database."""
    env = {**os.environ, "ERRCATALOG_DATA_DIR": str(folder), "DJANGO_SETTINGS_MODULE": "config.settings"}
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        env.pop(name, None)
    if postgres is None:
        yield env
        return
    import psycopg

    name = f"errcatalog_scale_bench_{os.getpid()}"
    with psycopg.connect(f"{postgres}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield {**env, "DATABASE_URL": f"{postgres}/{name}"}
    finally:
        with psycopg.connect(f"{postgres}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def scale_table(sizes: list[int], postgres: str | None) -> None:
    database = "PostgreSQL" if postgres else "SQLite"
    print(f"catalog scale ({database}; {VARIANTS_PER_CODE} variants per code, plus the default catalog)")
    print(f"  {'variants':>9s} {'rows':>7s} {'import s':>9s} {'build ms':>9s} {'memory MB':>10s}")
    for size in sizes:
        folder = Path(tempfile.mkdtemp(prefix="errcatalog-scale-"))
        try:
            with scratch_database(postgres, folder) as env:
                done = subprocess.run(  # noqa: S603 (this script, fixed arguments)
                    [sys.executable, __file__, "--measure-size", str(size)],
                    cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                )  # fmt: skip
            if done.returncode:
                raise SystemExit(f"size {size} failed:\n{done.stderr[-3000:]}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"  {r['variants']:9d} {r['rows']:7d} {r['import_s']:9.2f} {r['build_ms']:9.0f} {r['memory_mb']:10.1f}"
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)


# --- 2. A loaded server across edits ----------------------------------------------------------------------


def _request(url: str, *, method: str = "GET", token: str | None = None, body: dict | None = None) -> dict:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310 (our own server)
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return json.loads(response.read())


def _edit_through_the_api(port: int, token: str, n: int) -> None:
    _request(
        f"http://127.0.0.1:{port}/api/v1/codes/{EDIT_CODE}/",
        method="PATCH",
        token=token,
        body={"explanation": f"Edited through the REST API ({n})."},
    )


def _edit_from_another_process(database: str, n: int) -> None:
    sql = "UPDATE errcatalog_errorcode SET explanation = %s WHERE code = %s"
    text = f"Edited by another process ({n})."
    if database.startswith("postgres"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute(sql, (text, EDIT_CODE))
        return
    with contextlib.closing(sqlite3.connect(database, timeout=30)) as connection, connection:
        connection.execute(sql.replace("%s", "?"), (text, EDIT_CODE))


def _window(port: int, token: str, seconds: float, concurrency: int, edit) -> dict:
    load = subprocess.Popen(  # noqa: S603 (bench/mcp_bench.py's load generator, fixed arguments)
        [sys.executable, str(ROOT / "bench" / "mcp_bench.py"), "--load", str(port), token, "ours", "tool error",
         str(seconds), str(concurrency), "1"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    if edit is not None:
        time.sleep(seconds / 2)
        edit()
    out, _ = load.communicate(timeout=seconds + 60)
    return json.loads(out)


def load_table(variants: int, seconds: float, rounds: int, concurrency: int, postgres: str | None, redis: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="errcatalog-scale-load-"))
    server = None
    try:
        with scratch_database(postgres, folder) as base:
            # Plain HTTP on 127.0.0.1, as the load generator speaks it (production mode would redirect to HTTPS).
            env = server_env(
                folder, LOG_LEVEL="WARNING", SECURE_SSL_REDIRECT="0", **({"REDIS_URL": redis} if redis else {})
            )
            if "DATABASE_URL" in base:
                env["DATABASE_URL"] = base["DATABASE_URL"]
            database = env.get("DATABASE_URL") or str(folder / "errcatalog.sqlite3")
            manage(env, "migrate", "--noinput")
            manage(env, "shell", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                   "from tests.errcatalog.catalog.synthetic import synthetic_document; "
                   "from errcatalog.catalog.services import catalog_import; "
                   f"catalog_import(synthetic_document({variants // VARIANTS_PER_CODE}, {VARIANTS_PER_CODE})); "
                   "from django.contrib.auth.models import User; User.objects.create_superuser('bench')")  # fmt: skip
            token = manage(env, "token_create", "--user", "bench", "--name", "scale-bench", "--write")
            port = free_port()
            log = folder / "server.log"
            server = start_server("config.asgi:application", port, env, log, pin=True)
            wait_ready(port, token, "ours", server, log)
            _window(port, token, 2.0, concurrency, None)  # warm-up
            kinds = {
                "no edit": None,
                "REST API edit": lambda n: _edit_through_the_api(port, token, n),
                "edit by another process": lambda n: _edit_from_another_process(database, n),
            }
            results: dict[str, list[dict]] = {kind: [] for kind in kinds}
            builds: dict[str, int] = dict.fromkeys(kinds, 0)
            n = 0
            for round_no in range(rounds):
                order = list(kinds) if round_no % 2 == 0 else list(reversed(kinds))
                for kind in order:
                    n += 1
                    before = _request(f"http://127.0.0.1:{port}/health/")["catalog"]["builds"]
                    edit = kinds[kind]
                    results[kind].append(
                        _window(port, token, seconds, concurrency, None if edit is None else lambda e=edit, n=n: e(n))
                    )
                    time.sleep(1.0)  # the other process's edit reaches the server within a poll
                    builds[kind] += _request(f"http://127.0.0.1:{port}/health/")["catalog"]["builds"] - before
        print(
            f"\nloaded server: one uvicorn process, {variants} variants, {concurrency} connections of tools/call "
            f"(SERVER_ERROR), {rounds} x {seconds:g} s windows per kind{', Redis' if redis else ''}"
        )
        print(
            f"  {'window':24s} {'req/s':>7s} {'p50 ms':>7s} {'p99 ms':>7s} {'max ms':>7s} {'errors':>6s} "
            f"{'builds':>6s}   vs no edit"
        )
        baseline = _summary(results["no edit"])
        for kind, runs in results.items():
            s = _summary(runs)
            line = (
                f"  {kind:24s} {s['rate']:7.0f} {s['p50']:7.1f} {s['p99']:7.1f} {s['max']:7.1f} {s['errors']:6d} "
                f"{builds[kind]:6d}"
            )
            if kind != "no edit":
                line += f"   throughput {s['rate'] / baseline['rate']:.2f}x, slowest {s['max'] / baseline['max']:.2f}x"
            print(line)
        # The noise: how much windows without an edit differ from one another.
        quiet = [_summary([run]) for run in results["no edit"]]
        rates, slowest = [q["rate"] for q in quiet], [q["max"] for q in quiet]
        print(
            f"  noise between windows without an edit: throughput {min(rates) / max(rates):.2f}-1.00x, "
            f"slowest call {min(slowest):.0f}-{max(slowest):.0f} ms"
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(20)
        shutil.rmtree(folder, ignore_errors=True)


def _summary(runs: list[dict]) -> dict:
    latencies = sorted(x for r in runs for x in r["latencies"])
    elapsed = sum(r["elapsed"] for r in runs)
    errors = sum(r["errors"] for r in runs)
    return {
        "rate": (len(latencies) - errors) / elapsed,
        "p50": percentile(latencies, 0.5) * 1e3,
        "p99": percentile(latencies, 0.99) * 1e3,
        "max": latencies[-1] * 1e3,
        "errors": errors,
    }


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--measure-size":
        print(json.dumps(measure_size(int(sys.argv[2]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="catalog sizes in variants, comma-separated")
    parser.add_argument("--seconds", type=float, default=6.0, help="length of one loaded window")
    parser.add_argument("--rounds", type=int, default=2, help="windows of each kind")
    parser.add_argument("--concurrency", type=int, default=16, help="connections of the load generator")
    parser.add_argument("--postgres", help="a PostgreSQL server URL (no database) to measure on instead of SQLite")
    parser.add_argument("--redis-url", default="", help="serve the loaded server with this Redis (cache, limits)")
    parser.add_argument("--skip-load", action="store_true", help="only the table of sizes")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    scale_table(sizes, args.postgres)
    if not args.skip_load:
        load_table(max(sizes), args.seconds, args.rounds, args.concurrency, args.postgres, args.redis_url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

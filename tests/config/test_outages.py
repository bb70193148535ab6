"""Redis down must not mean errcatalog down: the served application while its Redis is SIGKILLed and restarted.

Each test serves ``config.asgi:application`` with uvicorn in a subprocess (``served_app.ServedApp``) on the test's
database (on SQLite, a copy the test pushes and pulls: ``WorkerDatabase``) and a ``redis-server`` of its own on a
free port, which the test kills with SIGKILL. The PostgreSQL outage is in ``test_database_outage.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import time
from collections.abc import Iterator

import pytest
from django.db import connection

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.defaults import catalog_load_defaults
from errcatalog.catalog.models import ErrorCode
from errcatalog.outcomes.models import OutcomeRecord
from tests.support.celery import celery_app_on
from tests.support.mcp import McpTarget
from tests.support.processes import process_environment
from tests.support.recorder import ThrowawayRedis
from tests.support.served_app import ServedApp
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TOOL, ARGUMENTS = "explain_error", {"code": "NETWORK_ERROR"}
# The recorder's in-memory bound during the outage (the setting's minimum): the load outlasts it on purpose, so
# both ways an answered call can end are exercised: recorded once, or counted as dropped.
LOCAL_BUFFER = 100
EDITED = "Edited while Redis was down: the catalog revision is in the database, so this text is served at once."


@pytest.fixture
def redis_server(tmp_path) -> Iterator[ThrowawayRedis]:
    folder = tmp_path / "redis"
    folder.mkdir()
    server = ThrowawayRedis(folder, appendonly=True)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def api_key(django_user_model) -> str:
    catalog_load_defaults(reset=False)
    owner = django_user_model.objects.create_user(username="agent-owner", password="pw", is_staff=True)
    return client_token_create(user=owner, name="outage-tests")[1]


@pytest.fixture
def served(tmp_path, redis_server, worker_database, api_key) -> Iterator[ServedApp]:
    data_dir = tmp_path / "web-data"
    data_dir.mkdir()
    env = process_environment(
        database_url=worker_database.url,
        redis_url=redis_server.url,
        data_dir=data_dir,
        ERRCATALOG_MCP_TOOLSETS="catalog",
        # Counted, never reached: every call is answered with the tool's own text.
        ERRCATALOG_MCP_RATE_LIMIT="1000000",
        ERRCATALOG_OUTCOMES_LOCAL_BUFFER=str(LOCAL_BUFFER),
        LOG_LEVEL="INFO",
    )
    worker_database.push()  # SQLite: the catalog and the token, into the served app's copy
    app = ServedApp(env, tmp_path).start()
    yield app
    app.stop()


def _edit_catalog(worker_database) -> None:
    if worker_database.file is not None:  # SQLite: the served app reads its own copy; its triggers raise the revision
        with contextlib.closing(sqlite3.connect(worker_database.file, timeout=30)) as db, db:
            db.execute("UPDATE errcatalog_errorcode SET explanation = ? WHERE code = 'NETWORK_ERROR'", [EDITED])
        return
    try:
        ErrorCode.objects.filter(code="NETWORK_ERROR").update(explanation=EDITED)
    finally:
        connection.close()  # this thread's own connection: the test database must be droppable at the end


def _text(result) -> str:
    assert not result.is_error, result.content[0].text
    return result.content[0].text


def _count(pattern: str, log: str) -> int:
    return len(re.findall(pattern, log))


def test_mcp_calls_are_answered_and_counted_through_a_redis_outage(
    served, redis_server, api_key, celery_worker_process, worker_database
):
    celery_worker_process.start(
        REDIS_URL=redis_server.url,
        CELERY_BROKER_URL=redis_server.url,
        ERRCATALOG_OUTCOMES_CLAIM_IDLE_SECONDS="1",
    )
    target = McpTarget(served.mcp_url, api_key)
    answers: list[str] = []
    problems: list[str] = []
    stop = asyncio.Event()

    async def steady_load(mode: str) -> None:
        async with target.client(mode=mode) as client:
            while not stop.is_set():
                try:
                    answers.append(_text(await client.call_tool(TOOL, ARGUMENTS)))
                except Exception as exc:  # a JSON-RPC error (-32603) or anything else: the test fails on it
                    problems.append(f"{mode}: {exc!r}")

    async def wait_for(condition, what: str, seconds: float = 60) -> None:
        await asyncio.to_thread(wait_until, condition, seconds=seconds, what=what)

    async def outage() -> dict:
        seen: dict = {}
        try:
            await wait_for(lambda: len(answers) >= 50, "calls before the outage")
            seen["before"] = set(answers)
            redis_server.kill()
            killed_at = len(answers)
            await wait_for(lambda: len(answers) >= killed_at + 50, "calls during the outage")
            # The catalog is edited during the outage, in another process: the app learns of it from the
            # database's catalog revision, which needs no Redis.
            edited_at = len(answers)
            await asyncio.to_thread(_edit_catalog, worker_database)
            await wait_for(lambda: any(EDITED in text for text in answers[edited_at:]), "the edit to show", 10)
            # Well past the recorder's bound, so events are dropped (and counted) while Redis is away.
            await wait_for(lambda: len(answers) >= killed_at + 3 * LOCAL_BUFFER, "calls during the outage")
            seen["health"] = await asyncio.to_thread(served.health)
            redis_server.start()
            restarted_at = len(answers)
            await wait_for(lambda: len(answers) >= restarted_at + 50, "calls after the outage")
            seen["during"] = set(answers[killed_at:edited_at])
            seen["after"] = set(answers[restarted_at:])
        finally:
            stop.set()
        return seen

    async def run() -> dict:
        results = await asyncio.gather(steady_load("auto"), steady_load("legacy"), outage())
        return results[-1]

    seen = asyncio.run(run())

    # Every call was answered with the catalog's own text: the old one until the edit, the edited one after it.
    assert problems == []
    assert len(seen["before"]) == 1
    assert seen["during"] == seen["before"]
    old_text = next(iter(seen["before"]))
    assert EDITED not in old_text
    assert {text for text in answers if EDITED not in text} == {old_text}
    assert len(seen["after"]) == 1 and EDITED in next(iter(seen["after"]))
    assert seen["health"]["status"] == "degraded"
    assert seen["health"]["checks"] == {"database": "ok", "redis": "unavailable"}

    # After Redis is back, every answered call is counted once: in the database, or in the dropped counter.
    def nothing_held() -> bool:
        return served.health()["outcomes"]["held"] == 0

    wait_until(nothing_held, what="the web process to send what it held")
    dropped = served.health()["outcomes"]["dropped"]
    assert dropped > 0  # the outage outlasted the in-memory bound
    from errcatalog.outcomes.tasks import drain_outcomes

    with celery_app_on(redis_server.url, {}):
        # What beat does in production, once a second.
        for _ in range(90):
            worker_database.pull()
            if OutcomeRecord.objects.count() >= len(answers) - dropped:
                break
            drain_outcomes.delay()
            time.sleep(1)
    # Events are stored under their event ID (the primary key), so a row is one call: none twice.
    assert OutcomeRecord.objects.count() == len(answers) - dropped
    assert set(OutcomeRecord.objects.values_list("tool", "outcome").distinct()) == {(TOOL, "ok")}

    # Each degradation was logged once for the outage, and its end once: never a line per call.
    log = served.log()
    assert _count(r"Redis is unreachable", log) == 1, log
    assert _count(r"Redis is reachable again", log) == 1, log
    assert _count(r"Redis is unavailable: the MCP rate limit counts calls in each process", log) == 1, log
    assert _count(r"Outcome recording paused", log) == 1, log
    assert _count(r"Outcome recording resumed .*; (\d+) events could not be recorded", log) == 1, log
    assert re.search(r"Outcome recording resumed .*; (\d+) events", log).group(1) == str(dropped)
    assert "Traceback" not in log


@contextlib.contextmanager
def _redis_down(redis_server: ThrowawayRedis) -> Iterator[None]:
    redis_server.kill()
    try:
        yield
    finally:
        redis_server.start()


def test_health_is_degraded_while_redis_is_down_and_ok_after(served, redis_server):
    assert served.get("/health/").json()["status"] == "ok"
    with _redis_down(redis_server):
        response = served.get("/health/")
        assert response.status_code == 200  # a load balancer keeps a process that still serves
        body = response.json()
        assert body.pop("catalog")["builds"] == 1  # loaded as the app started, and not since
        assert body == {
            "status": "degraded",
            "checks": {"database": "ok", "redis": "unavailable"},
            "outcomes": {"held": 0, "dropped": 0},
        }
        assert served.get("/healthz").json()["status"] == "degraded"  # the old name answers the same
    wait_until(lambda: served.health()["status"] == "ok", what="health to be ok again")
    assert served.health()["checks"] == {"database": "ok", "redis": "ok"}


def test_metrics_api_answers_503_json_while_redis_is_down_and_render_still_works(served, redis_server, api_key):
    assert served.get("/api/v1/metrics/", key=api_key).status_code == 200
    with _redis_down(redis_server):
        response = served.get("/api/v1/metrics/", key=api_key)
        assert response.status_code == 503
        assert response.headers["content-type"] == "application/json"
        assert int(response.headers["retry-after"]) > 0
        assert response.json() == {
            "error": {
                "status": 503,
                "code": "metrics_unavailable",
                "message": "The metrics store is unavailable right now; try again later.",
            }
        }
        rendered = served.post("/api/v1/render/", {"code": "NOT_FOUND"}, key=api_key)
        assert rendered.status_code == 200, rendered.text
        codes = served.get("/api/v1/codes/", key=api_key)
        assert codes.status_code == 200
    wait_until(lambda: served.get("/api/v1/metrics/", key=api_key).status_code == 200, what="metrics to return")

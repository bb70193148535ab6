"""PostgreSQL down: the MCP path goes on without it; everything that needs it answers a clear JSON 503.

The test runs a PostgreSQL cluster of its own (``initdb``/``pg_ctl`` of the machine's PostgreSQL 15 in a
temporary folder, on a free port), serves the application on it (``served_app.ServedApp``) with an upstream MCP
server behind its gateway, warms the catalog snapshot and the token, and SIGKILLs the cluster: the postmaster and
every backend, no shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import psycopg
import pytest

from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER, UpstreamProcess
from tests.support.mcp import McpTarget
from tests.support.oauth_flow import MemoryStorage, Person, oauth_client, oauth_provider
from tests.support.processes import REPO_ROOT, process_environment
from tests.support.recorder import free_port
from tests.support.served_app import ServedApp
from tests.support.waiting import wait_until

PG_BIN = Path("/usr/lib/postgresql/15/bin")
# Longer than the MCP token cache (mcpserver.auth.AUTH_CACHE_SECONDS, 5 s): calls after it are answered from the
# memory of tokens accepted before the outage, not from the cache's normal period.
OUTAGE_CALLS_SECONDS = 7.0


class ThrowawayPostgres:
    """A PostgreSQL cluster in a temporary folder, run as the ``postgres`` user when the test runs as root
    (``initdb`` refuses root), listening on 127.0.0.1 at a free port."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="errcatalog-pg-"))
        self.port = free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.folder, account.pw_uid, account.pw_gid)
            self._as_user = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/errcatalog"

    def _run(self, *command: str) -> None:
        subprocess.run([*self._as_user, *command], check=True, capture_output=True)  # noqa: S603 (fixed command)

    def start(self) -> None:
        data = self.folder / "data"
        self._run(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True) as c:
            c.execute("CREATE DATABASE errcatalog")

    def kill(self) -> None:
        """SIGKILL the postmaster and its children: the cluster is gone at once, as after a crash."""
        pid = int((self.folder / "data" / "postmaster.pid").read_text().split()[0])
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        for process in (pid, *map(int, children)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(process, signal.SIGKILL)
        wait_until(lambda: not Path(f"/proc/{pid}").exists(), what="the postmaster to die")

    def remove(self) -> None:
        pid_file = self.folder / "data" / "postmaster.pid"
        if pid_file.exists():
            with contextlib.suppress(Exception):
                self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def postgres() -> Iterator[ThrowawayPostgres]:
    cluster = ThrowawayPostgres()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


SETUP = """
import os
from django.contrib.auth import get_user_model
from errcatalog.catalog.defaults import catalog_load_defaults
from errcatalog.access.tokens import client_token_create
from errcatalog.gateway.services import upstream_create
catalog_load_defaults(reset=False)
upstream_create(actor=None, name="web", prefix="web", transport="http", url=os.environ["TEST_UPSTREAM_URL"])
owner = get_user_model().objects.create_user(username="agent-owner", password="pw", is_staff=True)
print(client_token_create(user=owner, name="warm")[1])
print(client_token_create(user=owner, name="never-used")[1])
"""


@pytest.fixture
def upstream(tmp_path) -> Iterator[UpstreamProcess]:
    served = UpstreamProcess(UPSTREAM_SERVER, "http", log=tmp_path / "upstream.log").start()
    yield served
    served.kill()


@pytest.fixture
def served(tmp_path, postgres, upstream) -> Iterator[tuple[ServedApp, str, str]]:
    """The application on the throwaway cluster (migrated, default catalog, two tokens, an upstream behind the
    gateway); no Redis."""
    data_dir = tmp_path / "web-data"
    data_dir.mkdir()
    env = process_environment(
        database_url=postgres.url,
        redis_url="",
        data_dir=data_dir,
        # Production keeps database connections open between requests; the outage breaks the open one.
        DATABASE_CONN_MAX_AGE="60",
        ERRCATALOG_MCP_TOOLSETS="catalog",
        LOG_LEVEL="INFO",
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--no-input"], cwd=REPO_ROOT, env=env, check=True, capture_output=True)  # noqa: S603
    keys = subprocess.run(  # noqa: S603 (fixed command line)
        [*manage, "shell", "-c", SETUP],
        cwd=REPO_ROOT,
        env={**env, "TEST_UPSTREAM_URL": upstream.url},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[-2:]  # the catalog load reports what it loaded first
    app = ServedApp(env, tmp_path).start()
    yield app, keys[0], keys[1]
    app.stop()


async def _signed_in_call(url: str, storage: MemoryStorage) -> None:
    async with oauth_client(url, oauth_provider(url, Person("agent-owner", "pw"), storage=storage)) as client:
        result = await client.call_tool("explain_error", {"code": "NOT_FOUND"})
        assert not result.is_error


def test_mcp_calls_go_on_without_postgres_and_the_rest_answers_json_503(served, postgres, tmp_path):
    app, warm_key, unseen_key = served
    target = McpTarget(app.mcp_url, warm_key)

    async def calls(seconds: float) -> list[str]:
        texts = []
        async with target.client() as client:
            deadline = time.monotonic() + seconds
            while not texts or time.monotonic() < deadline:
                result = await client.call_tool("explain_error", {"code": "NOT_FOUND"})
                assert not result.is_error, result.content[0].text
                texts.append(result.content[0].text)
                # The gateway keeps the upstreams it has: it can neither read them again nor report their health.
                forwarded = await client.call_tool("web__echo", {"text": "through the outage"})
                assert not forwarded.is_error and forwarded.content[0].text == "through the outage", forwarded
                # At most ten calls a second (two a round): the 7-second outage stays well under the token's 120
                # calls a minute (ERRCATALOG_MCP_RATE_LIMIT), which a fast machine reached with a shorter pause.
                await asyncio.sleep(0.2)
        return texts

    async def served_tools() -> set[str]:
        async with target.client() as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    wait_until(lambda: "web__echo" in asyncio.run(served_tools()), seconds=30, what="the upstream's tools served")
    # An OAuth client signs in and calls. First: its consent saves a grant, and any token saved makes the process
    # check every key again, which it could not do in the outage.
    oauth = MemoryStorage()
    asyncio.run(_signed_in_call(app.mcp_url, oauth))
    # Warm: the process loads its catalog snapshot and accepts the token.
    before = asyncio.run(calls(0))
    assert app.get("/api/v1/codes/", key=warm_key).status_code == 200
    assert app.health()["status"] == "ok"
    assert "errcatalog_episodes" in app.get("/metrics", key=warm_key).text  # a staff user's token may scrape

    postgres.kill()

    # MCP calls of the known token are still answered, with the same catalog text, past the token cache period.
    during = asyncio.run(calls(OUTAGE_CALLS_SECONDS))
    assert set(during) == set(before)

    # A token the process never accepted cannot be checked: a JSON 503, not a 401 and not a 500.
    refused = httpx2.post(
        app.mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {unseen_key}", "Accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert refused.status_code == 503
    assert refused.headers["content-type"] == "application/json"
    assert int(refused.headers["retry-after"]) > 0
    assert refused.json() == {
        "error": "The token store is unavailable right now, so the token cannot be checked; try again."
    }

    # An OAuth client signed in before the outage goes on calling (its token accepted from memory, as a key is); its
    # refresh waits for the database: a JSON 503 the client retries, never a 500.
    assert "explain_error" in McpTarget(app.mcp_url, oauth.tokens.access_token).tool_names()
    refresh = {"grant_type": "refresh_token", "client_id": oauth.client_info.client_id}
    refresh["refresh_token"] = oauth.tokens.refresh_token
    refreshed = httpx2.post(app.base_url + "/oauth/token/", data=refresh, timeout=10)
    assert refreshed.status_code == 503 and int(refreshed.headers["retry-after"]) > 0
    assert refreshed.json()["error"] == "temporarily_unavailable"

    # Prometheus's scrape checks its token in the database each time: a JSON 503 with Retry-After, never a 500.
    scraped = app.get("/metrics", key=warm_key)
    assert scraped.status_code == 503
    assert scraped.headers["content-type"] == "application/json" and int(scraped.headers["retry-after"]) > 0

    # The REST catalog needs the database: a JSON 503 in the API's error shape.
    listed = app.get("/api/v1/codes/", key=warm_key)
    assert listed.status_code == 503
    assert listed.headers["content-type"] == "application/json"
    assert int(listed.headers["retry-after"]) > 0
    assert listed.json() == {
        "error": {
            "status": 503,
            "code": "database_unavailable",
            "message": "The database is unavailable right now; try again later.",
        }
    }
    metrics = app.get("/api/v1/metrics/", key=warm_key)
    assert metrics.status_code == 503
    assert metrics.json()["error"]["code"] == "database_unavailable"  # the token check needs it first

    # Health names the dependency; the process still serves MCP calls, so it stays in rotation.
    health = app.get("/health/")
    assert health.status_code == 200
    assert health.json()["status"] == "degraded"
    assert health.json()["checks"] == {"database": "unavailable"}
    # A process started during the outage holds no catalog: it cannot serve anything, so it says unavailable.
    folder = tmp_path / "fresh"
    folder.mkdir()
    fresh = ServedApp(app.env, folder).start()
    try:
        health = fresh.get("/health/")
        assert health.status_code == 503
        assert health.json()["status"] == "unavailable"
        assert health.json()["checks"] == {"database": "unavailable"}
    finally:
        fresh.stop()

    log = app.log()
    assert log.count("The database is unreachable") == 1, log
    assert log.count("MCP tokens accepted before the outage are accepted from memory") == 1, log
    assert "Traceback" not in log

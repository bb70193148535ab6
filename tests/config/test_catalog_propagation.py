"""A catalog change made in another process reaches a served app within 2 seconds, built once, calls unaffected.

The app is ``uvicorn config.asgi:application`` in a subprocess (``served_app.ServedApp``), under load from
concurrent MCP clients, while ``manage.py catalog_import`` runs in a process of its own, as a deploy that imports
its catalog from git does. Twice: on the embedded default (a SQLite file, no Redis) and on the test's database
with Redis (production's setup).
"""

from __future__ import annotations

import asyncio
import copy
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.defaults import catalog_load_defaults
from errcatalog.catalog.document import dump_catalog
from tests.support.mcp import McpTarget
from tests.support.processes import process_environment
from tests.support.served_app import ServedApp, embedded_environment, manage, new_token
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

CODE = "NETWORK_ERROR"
CLIENTS = 8
# The promise: an edit is served everywhere within about a second; 2 s leaves room for a busy machine.
REACHES_WITHIN_SECONDS = 2.0


def _edited_catalog(default_document: dict, folder: Path, explanation: str) -> Path:
    document = copy.deepcopy(default_document)
    next(c for c in document["codes"] if c["code"] == CODE)["explanation"] = explanation
    path = folder / "edited.yaml"
    path.write_text(dump_catalog(document, "yaml"), encoding="utf-8")
    return path


@pytest.fixture
def embedded(tmp_path) -> Iterator[tuple[ServedApp, dict[str, str], str]]:
    """The embedded default, set up the way ``./dev up`` does, in a data folder of its own."""
    env = embedded_environment(
        tmp_path / "embedded", ERRCATALOG_MCP_TOOLSETS="catalog", ERRCATALOG_MCP_RATE_LIMIT="1000000"
    )
    key = new_token(env, "propagation")
    app = ServedApp(env, tmp_path).start()
    yield app, env, key
    app.stop()


@pytest.fixture
def with_redis(tmp_path, worker_database, redis_url, django_user_model) -> Iterator[tuple[ServedApp, dict, str]]:
    """The test's database (PostgreSQL in CI) and Redis, as production runs."""
    catalog_load_defaults(reset=False)
    key = client_token_create(user=django_user_model.objects.create_user("agent-owner"), name="propagation")[1]
    worker_database.push()
    data_dir = tmp_path / "web-data"
    data_dir.mkdir()
    env = process_environment(
        database_url=worker_database.url,
        redis_url=redis_url,
        data_dir=data_dir,
        LOG_LEVEL="INFO",
        ERRCATALOG_MCP_TOOLSETS="catalog",
        ERRCATALOG_MCP_RATE_LIMIT="1000000",
    )
    app = ServedApp(env, tmp_path).start()
    yield app, env, key
    app.stop()


def _import_under_load(app: ServedApp, env: dict[str, str], key: str, catalog_file: Path, text: str) -> dict:
    """Import ``catalog_file`` in another process while CLIENTS clients call the app; what they saw, and when."""
    target = McpTarget(app.mcp_url, key)
    answers: list[tuple[float, str]] = []
    problems: list[str] = []
    stop = asyncio.Event()

    async def client_load() -> None:
        async with target.client() as client:
            while not stop.is_set():
                result = await client.call_tool("explain_error", {"code": CODE})
                if result.is_error:
                    problems.append(result.content[0].text)
                answers.append((time.monotonic(), result.content[0].text))

    async def change() -> dict:
        try:
            await asyncio.to_thread(wait_until, lambda: len(answers) >= 100, seconds=60, what="calls to flow")
            await asyncio.to_thread(manage, env, "catalog_import", str(catalog_file))
            imported_at = time.monotonic()
            await asyncio.to_thread(
                wait_until,
                lambda: any(text in answer for at, answer in answers if at > imported_at),
                seconds=REACHES_WITHIN_SECONDS,
                what=f"the import to be served within {REACHES_WITHIN_SECONDS} s",
            )
            served_at = next(at for at, answer in answers if at > imported_at and text in answer)
            count = len(answers)
            await asyncio.to_thread(wait_until, lambda: len(answers) >= count + 100, seconds=60, what="more calls")
            return {"imported_at": imported_at, "served_at": served_at}
        finally:
            stop.set()

    async def run() -> dict:
        results = await asyncio.gather(*(client_load() for _ in range(CLIENTS)), change())
        return results[-1]

    seen = asyncio.run(run())
    assert problems == []
    return seen


def _builds_logged(app: ServedApp) -> list[str]:
    return re.findall(r"Catalog revision \d+ loaded", app.log())


@pytest.mark.parametrize("setup", ["embedded", "with_redis"])
def test_an_import_in_another_process_is_served_within_two_seconds_and_built_once(
    setup, request, default_document, tmp_path
):
    app, env, key = request.getfixturevalue(setup)
    text = f"Imported by another process ({setup})."
    seen = _import_under_load(app, env, key, _edited_catalog(default_document, tmp_path, text), text)
    assert seen["served_at"] - seen["imported_at"] <= REACHES_WITHIN_SECONDS
    # The app's first build, then exactly one for the import, however many calls were running.
    assert len(_builds_logged(app)) == 2, app.log()
    assert app.health()["catalog"]["builds"] == 2
    assert "Traceback" not in app.log()

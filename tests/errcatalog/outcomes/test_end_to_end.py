"""The whole outcome path with real processes: MCP tool calls → recorder → buffer → Celery worker → database →
rollups → metrics. Once on the embedded setup (batch files in the spool folder, Celery's filesystem broker, no
Redis), once on Redis."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from django.core.cache import cache

from errcatalog.catalog.defaults import catalog_load_defaults
from errcatalog.catalog.snapshot import catalog_changed
from errcatalog.outcomes import recorder, rollups
from errcatalog.outcomes.metrics import compute_metrics
from errcatalog.outcomes.models import Episode, OutcomeRecord
from errcatalog.outcomes.tasks import drain_outcomes
from mcpserver.auth import ClientIdentity
from mcpserver.calls import ToolCall
from mcpserver.pipeline import call_tool
from mcpserver.registry import autodiscover
from tests.support.recorder import celery_filesystem_broker
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def recording(settings):
    """Recording on, flushed by the test; the catalog toolset served; the default catalog loaded."""
    from django.db import connection

    autodiscover()
    recorder.reset()
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": True, "FLUSH_INTERVAL_MS": 600_000}
    settings.MCP = {**settings.MCP, "TOOLSETS": frozenset({"catalog"})}
    cache.clear()
    catalog_load_defaults(reset=False)
    catalog_changed()
    # Tool threads close their connections after each call, so the test database can be dropped at the end.
    max_age = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = 0
    yield
    connection.settings_dict["CONN_MAX_AGE"] = max_age
    recorder.reset()


def agent_session() -> None:
    """An agent that forgets an argument, is asked for it, and succeeds on the retry; plus one unrelated call."""
    client = ClientIdentity(key="token:7", name="agent")

    async def run() -> list[bool]:
        results = []
        for name, arguments in (("explain_error", {}), ("explain_error", {"code": "NETWORK_ERROR"})):
            call = ToolCall(name, arguments, client, session_id="s-1", protocol_version="2026-07-28")
            results.append(bool((await call_tool(call)).is_error))
        call = ToolCall("list_error_codes", {}, client, session_id="s-2", protocol_version="2026-07-28")
        results.append(bool((await call_tool(call)).is_error))
        return results

    assert asyncio.run(run()) == [True, False, False]


def assert_recovered_episode_in_metrics() -> None:
    assert OutcomeRecord.objects.count() == 3
    episode = Episode.objects.get()
    assert (episode.tool, episode.client, episode.code, episode.ending, episode.recovered_at_attempt) == (
        "explain_error",
        "token:7",
        "MISSING_PARAMETER",
        "recovered",
        1,
    )
    assert list(episode.events.order_by("attempt").values_list("outcome", "attempt")) == [("error", 0), ("ok", 1)]
    assert episode.interactive is True  # the missing argument was asked as a question

    rollups.compute_due()
    totals = compute_metrics("1h")["totals"]
    assert (totals["calls"], totals["errors"], totals["recovered"]) == (3, 1, 1)
    assert totals["retry_success_rate"] == 1.0
    assert totals["interactive_error_rate"] == 1.0


def test_embedded_setup_records_through_a_filesystem_broker_worker(
    recording, settings, celery_worker_process, worker_database
):
    settings.REDIS_URL = ""
    data_dir = Path(celery_worker_process.env["ERRCATALOG_DATA_DIR"])
    settings.OUTCOMES = {**settings.OUTCOMES, "SPOOL_DIR": str(data_dir / "outcomes" / "spool")}
    worker_database.push()
    celery_worker_process.start(REDIS_URL="", CELERY_BROKER_URL="filesystem://")
    # The folders the settings give a worker with this data dir (config/settings.py).
    with celery_filesystem_broker(data_dir / "celery" / "queue", control_folder=data_dir / "celery" / "control"):
        agent_session()
        assert recorder.flush(timeout=10) is True

    def stored() -> bool:
        worker_database.pull()
        return OutcomeRecord.objects.count() == 3

    wait_until(stored, what="the worker to ingest the events")
    assert_recovered_episode_in_metrics()


def test_redis_setup_records_through_the_stream_and_a_worker(
    recording, settings, redis_url, celery_redis_app, celery_worker_process, worker_database
):
    settings.REDIS_URL = redis_url
    worker_database.push()
    celery_worker_process.start()
    agent_session()
    assert recorder.flush(timeout=10) is True
    drain_outcomes.delay()

    def stored() -> bool:
        worker_database.pull()
        return OutcomeRecord.objects.count() == 3

    wait_until(stored, what="the worker to drain the stream")
    assert_recovered_episode_in_metrics()

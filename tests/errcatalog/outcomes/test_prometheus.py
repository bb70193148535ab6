"""The Prometheus metrics (``errcatalog.outcomes.prometheus``): the recorder's counters, the ingest backlog from
Redis and from the spool, episodes by ending, and several web processes adding up (``PROMETHEUS_MULTIPROC_DIR``)
in the served app. Who may scrape ``/metrics`` and what a call counts: tests/mcpserver/test_metrics_http.py."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
from datetime import UTC, datetime

import httpx2
import pytest
import redis
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from errcatalog.outcomes import partitions, prometheus
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.spool import spool_write
from tests.errcatalog.outcomes.rows import episode
from tests.support.processes import REPO_ROOT
from tests.support.served_app import ServedApp, embedded_environment, new_token
from tests.support.waiting import wait_until


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


# --- The recorder ---------------------------------------------------------------------------------------------


def test_the_recorders_counters_are_copied_as_they_move():
    mirror = prometheus.RecorderMirror()
    registry_before = _recorder_values()
    mirror.copy(recorded=10, sent=8, dropped=1, held=1)
    mirror.copy(recorded=15, sent=14, dropped=1, held=0)
    mirror.copy(recorded=3, sent=3, dropped=0, held=0)  # the recorder was reset: its counters start over
    after = _recorder_values()
    assert after["recorded"] - registry_before["recorded"] == 18
    assert after["sent"] - registry_before["sent"] == 17
    assert after["dropped"] - registry_before["dropped"] == 1
    assert after["held"] == 0


def _recorder_values() -> dict[str, float]:
    # This process's own metrics: what is read when scraped (the database, the buffer) is not needed here.
    text = generate_latest(prometheus.registry()).decode()
    return {
        "recorded": value(text, "errcatalog_outcome_events_recorded_total"),
        "sent": value(text, "errcatalog_outcome_events_sent_total"),
        "dropped": value(text, "errcatalog_outcome_events_dropped_total"),
        "held": value(text, "errcatalog_outcome_events_held"),
    }


@pytest.mark.django_db
def test_the_recorder_thread_reports_what_it_sent(settings, redis_url):
    from errcatalog.outcomes import recorder

    settings.REDIS_URL = redis_url
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": True, "SPOOL_DIR": "", "FLUSH_INTERVAL_MS": 20}
    recorder.reset()
    before = _recorder_values()
    try:
        for _ in range(5):
            recorder.record(OutcomeEvent(tool="send_email", client="token:1", outcome="ok"))
        wait_until(lambda: _recorder_values()["sent"] - before["sent"] == 5, what="five events reported sent")
    finally:
        recorder.reset()
    assert _recorder_values()["recorded"] - before["recorded"] == 5


# --- Calls ----------------------------------------------------------------------------------------------------


def _call(tool: str, seconds: float, *, code: str | None = None) -> OutcomeEvent:
    return OutcomeEvent(
        tool=tool, outcome="error" if code else "ok", code=code, interactive=bool(code), latency_ms=seconds * 1000
    )


def _own_samples(tool: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """This process's samples of ``tool``, as they stand (no fold first, unlike ``exposition``)."""
    text = generate_latest(prometheus.registry()).decode()
    return {key: count for key, count in samples(text).items() if ("tool", tool) in key[1]}


def test_calls_folded_in_bulk_count_as_observed_one_by_one():
    # Durations in every kind of place: on a bound (a bucket takes what does not exceed it), between bounds, past
    # the last one, zero.
    durations = [0.0, 0.0004, 0.001, 0.0010001, 0.0025, 0.3, 0.3, 59.9, 60.0, 75.0]
    for seconds in durations:
        prometheus.observe_call(_call("bulk_probe", seconds), served=True)
    prometheus.observe_call(_call("bulk_probe", 0.002, code="MISSING_PARAMETER"), served=True)
    prometheus.fold_calls()

    reference = CollectorRegistry()
    histogram = Histogram("errcatalog_tool_call_duration_seconds", "", ["tool", "outcome"],
                          buckets=prometheus.DURATION_BUCKETS, registry=reference)  # fmt: skip
    for seconds in durations:
        histogram.labels("bulk_probe", "ok").observe(_call("bulk_probe", seconds).latency_ms / 1000)
    histogram.labels("bulk_probe", "error").observe(_call("bulk_probe", 0.002).latency_ms / 1000)
    expected = samples(generate_latest(reference).decode())

    folded = _own_samples("bulk_probe")
    durations_folded = {
        key: count for key, count in folded.items() if key[0].startswith("errcatalog_tool_call_duration")
    }
    assert durations_folded.keys() == expected.keys()
    for key, count in expected.items():
        assert durations_folded[key] == pytest.approx(count), key
    assert folded[("errcatalog_tool_calls_total", (("outcome", "ok"), ("tool", "bulk_probe"), ("upstream", "")))] == 10
    errors = (("code", "MISSING_PARAMETER"), ("interactive", "true"), ("tool", "bulk_probe"), ("upstream", ""))
    assert folded[("errcatalog_tool_errors_total", errors)] == 1


def test_calls_reach_the_metrics_without_a_scrape():
    # What another process's scrape reads (PROMETHEUS_MULTIPROC_DIR): the folding thread moves them in.
    for _ in range(3):
        prometheus.observe_call(_call("unscraped_probe", 0.01), served=True)
    key = ("errcatalog_tool_calls_total", (("outcome", "ok"), ("tool", "unscraped_probe"), ("upstream", "")))
    wait_until(lambda: _own_samples("unscraped_probe").get(key) == 3, what="three calls folded by the thread")


def test_a_burst_is_folded_on_the_request_path(monkeypatch):
    # Bounded memory whatever becomes of the folding thread.
    monkeypatch.setattr(prometheus, "FOLD_AT", 10)
    for _ in range(25):
        prometheus.observe_call(_call("burst_probe", 0.01), served=True)
        assert len(prometheus._unfolded) < 10
    prometheus.fold_calls()
    key = ("errcatalog_tool_calls_total", (("outcome", "ok"), ("tool", "burst_probe"), ("upstream", "")))
    assert _own_samples("burst_probe")[key] == 25


def test_calls_from_many_threads_are_all_counted_while_folds_run():
    stop = threading.Event()

    def fold_continually() -> None:
        while not stop.is_set():
            prometheus.fold_calls()

    def call_many() -> None:
        for _ in range(5000):
            prometheus.observe_call(_call("threads_probe", 0.003), served=True)

    folder = threading.Thread(target=fold_continually)
    callers = [threading.Thread(target=call_many) for _ in range(4)]
    folder.start()
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join()
    stop.set()
    folder.join()
    prometheus.fold_calls()
    text = generate_latest(prometheus.registry()).decode()
    assert value(text, "errcatalog_tool_calls_total", tool="threads_probe", upstream="", outcome="ok") == 20_000
    assert value(text, "errcatalog_tool_call_duration_seconds_count", tool="threads_probe", outcome="ok") == 20_000
    assert value(text, "errcatalog_tool_call_duration_seconds_bucket", tool="threads_probe", outcome="ok",
                 le="0.005") == 20_000  # fmt: skip


def test_a_forked_child_folds_only_its_own_calls():
    # The folding thread waits meanwhile, so the parent's call is still unfolded when the child is made.
    with prometheus._fold_lock:
        prometheus.observe_call(_call("fork_probe", 0.01), served=True)
        pid = os.fork()
        if pid == 0:  # the child reports through its exit status
            try:
                ok = not prometheus._unfolded and not prometheus._folder.running
                prometheus.observe_call(_call("fork_probe", 0.01), served=True)
                ok = ok and len(prometheus._unfolded) == 1 and prometheus._folder.running
            except BaseException:
                ok = False
            os._exit(0 if ok else 1)
        assert prometheus._unfolded  # the parent's call is still its own to fold
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# --- Ingest backlog -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_backlog_is_what_waits_in_each_partitions_stream_and_how_old_it_is(settings, redis_url):
    settings.REDIS_URL = redis_url
    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 4}
    client = redis.Redis.from_url(redis_url)
    first, third, left_behind = (partitions.stream_key(settings.OUTCOMES["STREAM_KEY"], n) for n in (0, 2, 9))
    added_ms = int(time.time() * 1000) - 42_000  # as if added 42 s ago
    client.xadd(first, {"e": b"{}"}, id=f"{added_ms}-0")
    client.xadd(first, {"e": b"{}"})
    client.xadd(third, {"e": b"{}"})
    client.xadd(left_behind, {"e": b"{}"})  # a partition of an earlier, larger count
    text = prometheus.exposition().decode()
    assert value(text, "errcatalog_ingest_buffer_up") == 1
    backlog = {
        labels: count for (name, labels), count in samples(text).items() if name == "errcatalog_ingest_backlog_events"
    }
    assert backlog == {(("partition", "0"),): 2, (("partition", "1"),): 0, (("partition", "2"),): 1,
                       (("partition", "3"),): 0, (("partition", "9"),): 1}  # fmt: skip
    assert 42 <= value(text, "errcatalog_ingest_backlog_oldest_seconds", partition="0") < 60
    assert value(text, "errcatalog_ingest_backlog_oldest_seconds", partition="2") < 10
    client.delete(first, third, left_behind)
    text = prometheus.exposition().decode()
    assert value(text, "errcatalog_ingest_backlog_events", partition="0") == 0
    assert 'partition="9"' not in text


@pytest.mark.django_db
def test_an_unreachable_buffer_is_reported_down_and_the_scrape_still_answers(settings, caplog):
    from tests.support.recorder import free_port

    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    text = prometheus.exposition().decode()
    assert value(text, "errcatalog_ingest_buffer_up") == 0
    assert "errcatalog_tool_calls_total" in text or "errcatalog_tool_calls" in text
    assert "outcome buffer could not be read (ConnectionError)" in caplog.text


@pytest.mark.django_db
def test_without_redis_the_backlog_is_what_waits_in_the_spool(settings, tmp_path):
    settings.REDIS_URL = ""
    settings.OUTCOMES = {**settings.OUTCOMES, "SPOOL_DIR": str(tmp_path)}
    spool_write(tmp_path, [{"e": 1}, {"e": 2}, {"e": 3}])
    spool_write(tmp_path, [{"e": 4}])
    # A batch written before names carried their count is read to count it.
    (tmp_path / f"{time.time_ns():020d}-1-0000000000.batch.json").write_text('[{"e": 5}, {"e": 6}]')
    text = prometheus.exposition().decode()
    assert value(text, "errcatalog_ingest_backlog_events", partition="0") == 6
    assert 0 <= value(text, "errcatalog_ingest_backlog_oldest_seconds", partition="0") < 30


# --- Episodes -------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_episodes_are_counted_by_ending_and_retry(monkeypatch):
    monkeypatch.setattr(prometheus, "EPISODE_CACHE_SECONDS", 0.0)
    now = datetime(2026, 11, 1, 12, tzinfo=UTC)
    rows = [("recovered", 1), ("recovered", 2), ("exhausted", 3), ("abandoned", 0), ("open", 0)]
    for index, (ending, retries) in enumerate(rows):
        episode(now, ending=ending, client=f"token:{index}", retries=retries)
    text = prometheus.exposition().decode()
    assert value(text, "errcatalog_episodes", ending="recovered", retried="true") == 2
    assert value(text, "errcatalog_episodes", ending="exhausted", retried="true") == 1
    assert value(text, "errcatalog_episodes", ending="abandoned", retried="false") == 1
    assert value(text, "errcatalog_episodes", ending="open", retried="false") == 1
    # Every combination is exposed, zero or not, so that a rate over them never lacks a series.
    assert ("errcatalog_episodes", (("ending", "abandoned"), ("retried", "true"))) in samples(text)


# --- Several processes ----------------------------------------------------------------------------------------


def test_several_processes_add_up(tmp_path):
    """Two web processes sharing one PROMETHEUS_MULTIPROC_DIR (as ``uvicorn --workers 2`` processes do): a scrape of
    either reports the calls both answered."""
    multiproc = tmp_path / "prometheus"
    multiproc.mkdir()
    env = embedded_environment(tmp_path / "data", PROMETHEUS_MULTIPROC_DIR=str(multiproc))
    key = new_token(env, "agent")
    scraper = new_token(env, "prometheus", metrics=True)
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = ServedApp(env, tmp_path / "first").start()
    second = ServedApp(env, tmp_path / "second").start()
    try:

        async def call(app: ServedApp, times: int) -> None:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=20) as http,
                Client(streamable_http_client(app.mcp_url, http_client=http)) as client,
            ):
                for _ in range(times):
                    await client.call_tool("explain_error", {"code": "TIMEOUT"})

        asyncio.run(call(first, 3))
        asyncio.run(call(second, 5))
        for app in (first, second):
            # A scrape sees its own process's calls at once, the other's once that one folded them (FOLD_SECONDS).
            def counted(app: ServedApp = app) -> bool:
                text = app.get("/metrics", key=scraper).text
                calls = value(text, "errcatalog_tool_calls_total", tool="explain_error", upstream="", outcome="ok")
                timed = value(text, "errcatalog_tool_call_duration_seconds_count", tool="explain_error", outcome="ok")
                assert calls <= 8 and timed <= 8, (calls, timed)
                return calls == timed == 8

            wait_until(counted, what="both processes' calls in one scrape")
    finally:
        first.stop()
        second.stop()


# --- The Grafana dashboard ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_grafana_dashboard_reads_only_metrics_we_expose_and_shows_the_targets():
    from errcatalog.outcomes.metrics import TARGETS

    dashboard = json.loads((REPO_ROOT / "deploy" / "grafana" / "errcatalog-dashboard.json").read_text())
    queries = " ".join(
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", ())
    ) + json.dumps(dashboard["templating"])
    exposed: set[str] = set()
    for family in text_string_to_metric_families(prometheus.exposition().decode()):
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}.get(family.type, ("",))
        exposed.update(family.name + suffix for suffix in suffixes)
    asked = set(re.findall(r"errcatalog_[a-z_]+", queries))
    assert asked and asked <= exposed, asked - exposed
    thresholds = {
        step["value"]
        for panel in dashboard["panels"]
        for step in panel["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", ())
    }
    assert {TARGETS["retry_success_rate"], TARGETS["interactive_error_rate"]} <= thresholds

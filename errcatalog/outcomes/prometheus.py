"""The outcomes as Prometheus metrics (``prometheus_client``): what ``GET /metrics`` exposes.

Counted where they happen, in the process that serves them:

- ``errcatalog_tool_calls_total{tool, upstream, outcome}``: every MCP tool call answered (``outcome``: ``ok``,
  ``error``, ``input_required``), whether or not outcome recording is on;
- ``errcatalog_tool_errors_total{tool, upstream, code, interactive}``: the failed ones by catalog code;
  ``interactive="true"`` for a question or an elicitation (the question protocol), so the interactive-error rate
  (interactive errors among errors, as the dashboard has it) is
  ``sum(rate(errcatalog_tool_errors_total{interactive="true"}[5m])) / sum(rate(errcatalog_tool_errors_total[5m]))``;
- ``errcatalog_tool_call_duration_seconds{tool, outcome}``: a histogram of how long each call took to answer
  (these three are counted on the request path in bulk, ``observe_call`` and ``fold_calls``: a scrape of the
  process sees every call it answered, one of another process each call older than ``FOLD_SECONDS``);
- ``errcatalog_upstream_failures_total{upstream, classified}``: failures of upstreams' calls, by whether a specific
  rule classified them (counted by ``errcatalog.gateway.inbox``, which the gateway's domain owns);
- ``errcatalog_upstream_requests_total{upstream, method, outcome, code}``: the requests to upstreams that are not tool
  calls (a resource read or subscription, a prompt, a completion: ``mcpserver.offerings``), by how they ended and the
  catalog code of a failure; they are no tool calls and no outcome events (docs/guides/gateway.md says why);
- ``errcatalog_outcome_events_{recorded,sent,dropped}_total`` and ``errcatalog_outcome_events_held``: the outcome
  recorder's counters (``errcatalog.outcomes.recorder``), copied by its sender thread after every send.

Read when scraped, from what every process shares:

- ``errcatalog_ingest_backlog_events{partition}`` and ``errcatalog_ingest_backlog_oldest_seconds{partition}``:
  outcome events waiting for an ingest worker in each partition's Redis stream (the spool folder without Redis:
  partition "0") and how long the oldest has waited; a partition whose age only grows has lost its drainer.
  ``errcatalog_ingest_buffer_up`` is 0 when the buffer cannot be read;
- ``errcatalog_episodes{ending, retried}``: episodes by how they ended (``open``, ``recovered``, ``exhausted``,
  ``abandoned``) and whether a retry followed the error, from the database, at most ``EPISODE_CACHE_SECONDS`` old;
  the retry success rate is ``recovered`` among the ended episodes with ``retried="true"``.

Label values are bounded: ``tool`` is a served tool's name, or ``(unknown)`` for a call of a name nothing serves
(a caller's text, however well-formed, never becomes a label value); ``upstream`` a configured upstream's name
or empty; ``code`` a catalog code; ``outcome``, ``interactive`` and ``ending`` fixed words.

Several processes behind one server (``uvicorn --workers N``): start them with ``PROMETHEUS_MULTIPROC_DIR`` naming
an empty folder; ``prometheus_client`` then keeps each process's values in files there, and a scrape of any
process reports their sum (``registry()``). One process per container (``docker-compose.yml``) needs none of
that: each container is a scrape target of its own.
"""

from __future__ import annotations

import bisect
import collections
import logging
import math
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from django.conf import settings
from django.db.models import Count, Q
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from errcatalog.background import OnDemandThread
from errcatalog.dependencies import DATABASE_ERRORS
from errcatalog.outcomes import partitions
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.spool import spool_backlog

logger = logging.getLogger(__name__)

UNKNOWN_TOOL = "(unknown)"
# Seconds: from a cached answer (a few hundred microseconds) to a slow upstream's timeout.
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_BOUNDS = (*DURATION_BUCKETS, math.inf)  # the histogram's buckets: prometheus-client adds +Inf
EPISODE_CACHE_SECONDS = 15.0
# A scrape gives up on the buffer after this long, rather than hang the scrape.
BUFFER_TIMEOUT_SECONDS = 1.0

# The ``*_created`` series (when each label set was first seen) double the exposition and tell an operator nothing.
disable_created_metrics()


class _BulkHistogram(Histogram):
    """A histogram that also takes many observations at once (``fold_calls``): their count per bucket and their sum,
    one update per bucket instead of one per observation."""

    def observe_counted(self, counts: list[int], total: float) -> None:
        """Add ``counts[i]`` observations to bucket ``i`` (the buckets' bounds in order, ``+Inf`` last), whose values
        sum to ``total``.

        The same as calling ``observe`` for each (``_sum`` and ``_buckets`` are what it changes: prometheus-client
        is pinned, and tests/errcatalog/outcomes/test_prometheus.py compares the two).
        """
        self._raise_if_not_observable()
        self._sum.inc(total)
        for bucket, count in zip(self._buckets, counts, strict=True):
            if count:
                bucket.inc(count)


TOOL_CALLS = Counter(
    "errcatalog_tool_calls", "MCP tool calls answered, by tool, upstream and outcome.", ["tool", "upstream", "outcome"]
)
TOOL_ERRORS = Counter(
    "errcatalog_tool_errors",
    "MCP tool calls that failed, by tool, upstream, catalog code and whether the error asked for input.",
    ["tool", "upstream", "code", "interactive"],
)
TOOL_CALL_DURATION = _BulkHistogram(
    "errcatalog_tool_call_duration_seconds",
    "Time to answer an MCP tool call, by tool and outcome.",
    ["tool", "outcome"],
    buckets=DURATION_BUCKETS,
)
UPSTREAM_REQUESTS = Counter(
    "errcatalog_upstream_requests",
    "Requests to upstream MCP servers other than tool calls (resource reads and subscriptions, prompts, "
    "completions), by upstream, method, outcome and the catalog code of a failure.",
    ["upstream", "method", "outcome", "code"],
)
# The methods ``UPSTREAM_REQUESTS`` counts (any other is counted as "other": label values stay bounded).
UPSTREAM_METHODS = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe", "prompts/get", "completion/complete"}
)
EVENTS_RECORDED = Counter("errcatalog_outcome_events_recorded", "Outcome events accepted by this process's recorder.")
EVENTS_SENT = Counter("errcatalog_outcome_events_sent", "Outcome events that reached the ingest buffer.")
EVENTS_DROPPED = Counter(
    "errcatalog_outcome_events_dropped", "Outcome events lost (buffer unreachable for too long, or unencodable)."
)
EVENTS_HELD = Gauge(
    "errcatalog_outcome_events_held", "Outcome events waiting in a web process to be sent.", multiprocess_mode="livesum"
)

# --- Calls: counted on the request path, folded into the metrics in bulk ----------------------------------------

# prometheus_client takes a lock for every value it changes, three or four per call, on the event loop. A call only
# appends its labels and duration to ``_unfolded`` (a deque append is atomic, so any thread may add), and ``fold_calls``
# moves what waits into the metrics, one update per label set: every ``FOLD_SECONDS`` from a daemon thread, before each
# exposition of this process, and on the request path when ``FOLD_AT`` calls wait (memory stays bounded whatever becomes
# of the thread; several seconds of a process's top rate, so a healthy thread always folds first). Under
# ``PROMETHEUS_MULTIPROC_DIR`` a scrape served by another process sees a call within ``FOLD_SECONDS``. A fold holds the
# GIL while it runs, and every request in flight waits: folding often keeps each wait short.
FOLD_SECONDS = 0.1
FOLD_AT = 16_384

_CallKey = tuple[str, str, str, str | None, bool]  # tool, upstream, outcome, code, interactive
_unfolded: collections.deque[tuple[_CallKey, float]] = collections.deque()
_fold_lock = threading.Lock()


def observe_call(event: OutcomeEvent, *, served: bool) -> None:
    """Count and time one answered call (``served``: the called name is a tool this server serves)."""
    tool = event.tool if served else UNKNOWN_TOOL
    _unfolded.append(
        ((tool, event.upstream or "", event.outcome, event.code, event.interactive), event.latency_ms / 1000)
    )
    if len(_unfolded) >= FOLD_AT:
        fold_calls()
    else:
        _folder.ensure()


def observe_upstream_request(upstream: str, method: str, *, code: str | None) -> None:
    """Count one request relayed to ``upstream`` (a configured upstream's name) that is not a tool call; ``code``: the
    catalog code it failed with, None when it succeeded."""
    shown = method if method in UPSTREAM_METHODS else "other"
    UPSTREAM_REQUESTS.labels(upstream, shown, "ok" if code is None else "error", code or "").inc()


def fold_calls() -> None:
    """Move the calls observed so far into the metrics (those observed meanwhile wait for the next fold)."""
    with _fold_lock:
        buckets: dict[_CallKey, list[int]] = {}
        seconds: dict[_CallKey, float] = {}
        for _ in range(len(_unfolded)):
            key, duration = _unfolded.popleft()  # only folds take, under the lock: never empty here
            counts = buckets.get(key)
            if counts is None:
                counts = buckets[key] = [0] * len(_BOUNDS)
            # The first bucket whose bound the duration does not exceed, as ``Histogram.observe`` picks it.
            counts[bisect.bisect_left(_BOUNDS, duration)] += 1
            seconds[key] = seconds.get(key, 0.0) + duration
        for key, counts in buckets.items():
            tool, upstream, outcome, code, interactive = key
            calls = sum(counts)
            TOOL_CALLS.labels(tool, upstream, outcome).inc(calls)
            if code is not None:
                TOOL_ERRORS.labels(tool, upstream, code, "true" if interactive else "false").inc(calls)
            TOOL_CALL_DURATION.labels(tool, outcome).observe_counted(counts, seconds[key])


def _fold_forever() -> None:
    while True:
        time.sleep(FOLD_SECONDS)
        try:
            fold_calls()
        except Exception:  # the thread must outlive anything: the next fold counts the calls after these
            logger.exception("Metrics: the calls observed could not be added to the metrics")


# Started by the first call a process observes (a forked child starts its own).
_folder = OnDemandThread("metrics-fold", _fold_forever)


def _after_fork_in_child() -> None:
    # The parent's calls are the parent's to fold; a lock it held at the fork would never be released here.
    global _fold_lock
    _unfolded.clear()
    _fold_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


class RecorderMirror:
    """The recorder's counters, copied into the metrics by its sender thread (so they add up across processes)."""

    def __init__(self) -> None:
        self._copied = (0, 0, 0)
        self._lock = threading.Lock()

    def copy(self, *, recorded: int, sent: int, dropped: int, held: int) -> None:
        with self._lock:
            for counter, now, before in zip(
                (EVENTS_RECORDED, EVENTS_SENT, EVENTS_DROPPED), (recorded, sent, dropped), self._copied, strict=True
            ):
                # A recorder reset (tests) starts its counters over: count from there.
                counter.inc(now - before if now >= before else now)
            EVENTS_HELD.set(held)
            self._copied = (recorded, sent, dropped)


recorder_mirror = RecorderMirror()


# --- Read when scraped ----------------------------------------------------------------------------------------


class IngestBacklogCollector(Collector):
    """Events waiting for an ingest worker, and the age of the oldest, from the buffer every process writes to."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("errcatalog_ingest_buffer_up", "1 when the outcome buffer could be read.")
        waiting = GaugeMetricFamily(
            "errcatalog_ingest_backlog_events",
            "Outcome events waiting for an ingest worker, by partition (0 without Redis).",
            labels=["partition"],
        )
        oldest = GaugeMetricFamily(
            "errcatalog_ingest_backlog_oldest_seconds",
            "How long the oldest waiting outcome event of a partition has waited.",
            labels=["partition"],
        )
        try:
            backlog = _backlog()
        except (redis.RedisError, OSError) as exc:
            logger.warning("Metrics: the outcome buffer could not be read (%s)", type(exc).__name__)
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
            for index, (count, age) in sorted(backlog.items()):
                waiting.add_metric([str(index)], count)
                oldest.add_metric([str(index)], age or 0.0)
        yield up
        yield waiting
        yield oldest


def _backlog() -> dict[int, tuple[int, float | None]]:
    """Per partition: the events waiting and how long the oldest has waited (None: none waits).

    The configured partitions always appear; a partition beyond them only while it holds events (a larger
    partition count left them behind), so the label has at most ``partitions.SLOTS`` values.
    """
    outcomes = settings.OUTCOMES
    if settings.REDIS_URL:
        keys = partitions.stream_keys(outcomes["STREAM_KEY"])
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=BUFFER_TIMEOUT_SECONDS, socket_connect_timeout=BUFFER_TIMEOUT_SECONDS
        )
        try:
            with client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.xlen(key)
                    pipe.xrange(key, count=1)
                replies = pipe.execute()
        finally:
            client.close()
        configured = outcomes["PARTITIONS"]
        now = time.time()
        found: dict[int, tuple[int, float | None]] = {}
        for index in range(len(keys)):
            length, first = int(replies[2 * index]), replies[2 * index + 1]
            if index >= configured and not length:
                continue
            # Stream entry ids start with the time they were added, in milliseconds; ingested entries are deleted.
            age = max(0.0, now - int(first[0][0].split(b"-", 1)[0]) / 1000) if first else None
            found[index] = (length, age)
        return found
    if outcomes["SPOOL_DIR"]:
        return {0: spool_backlog(Path(outcomes["SPOOL_DIR"]))}
    return {0: (0, None)}  # batches travel as Celery tasks: the broker's own metrics show them


class EpisodeCollector(Collector):
    """Episodes by ending and by whether they were retried, from the database, counted at most once per
    ``EPISODE_CACHE_SECONDS`` per process (a scrape every few seconds costs one query per period)."""

    def __init__(self) -> None:
        self._counted: tuple[float, dict[tuple[str, bool], int]] | None = None
        self._lock = threading.Lock()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "errcatalog_episodes",
            "Episodes (an error and the calls after it) by ending and by whether any retry followed the error.",
            labels=["ending", "retried"],
        )
        for (ending, retried), count in sorted(self._counts().items()):
            family.add_metric([ending, "true" if retried else "false"], count)
        yield family

    def _counts(self) -> dict[tuple[str, bool], int]:
        from errcatalog.outcomes.models import Episode

        with self._lock:
            counted = self._counted
            if counted is not None and time.monotonic() - counted[0] <= EPISODE_CACHE_SECONDS:
                return counted[1]
            counts = {(ending, retried): 0 for ending in Episode.Ending.values for retried in (False, True)}
            try:
                rows = (
                    Episode.objects.annotate(retried=Q(retries__gt=0))
                    .values_list("ending", "retried")
                    .annotate(n=Count("id"))
                    .order_by()
                )
                for ending, retried, n in rows:
                    counts[(ending, bool(retried))] = n
            except DATABASE_ERRORS as exc:
                logger.warning("Metrics: episodes could not be counted (%s)", type(exc).__name__)
                return counted[1] if counted is not None else {}
            self._counted = (time.monotonic(), counts)
            return counts


_scraped = CollectorRegistry(auto_describe=False)
_scraped.register(IngestBacklogCollector())
_scraped.register(EpisodeCollector())


def exposition() -> bytes:
    """Everything ``GET /metrics`` answers, in Prometheus's text format."""
    fold_calls()  # this process's calls up to now; another process's within its FOLD_SECONDS
    return generate_latest(registry()) + generate_latest(_scraped)


def registry() -> CollectorRegistry:
    """The in-process metrics: this process's, or every process's sum under ``PROMETHEUS_MULTIPROC_DIR``."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        combined = CollectorRegistry()
        MultiProcessCollector(combined)
        return combined
    return REGISTRY

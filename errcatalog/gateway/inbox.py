"""The inbox of unclassified upstream failures: what the catalog's rules do not recognise yet, grouped for staff.

Interface:
- ``note(upstream, tool, kind, text, *, classified, withheld=False)``: called by the MCP pipeline for every failure of
  an upstream's call, on the request path. Counts it (per hour, upstream and whether a specific rule classified it:
  the dashboard's classified share, and Prometheus's ``errcatalog_upstream_failures_total``) and, when it fell to a
  fallback code (``errcatalog.vocabulary.UNCLASSIFIED_UPSTREAM_CODES``) or its text was withheld from the model
  because it spoke to it (``withheld``, counted apart), adds it to its group (``UpstreamFailureGroup``: upstream,
  tool, kind and text signature). Never raises, never does I/O.
- ``flush() -> bool``: write what this process holds now (the flusher thread does so every ``FLUSH_SECONDS``;
  tests and shutdown call it). True when everything was written.
- ``reset()``: forget what is held (tests).

Why in memory first: a failing upstream can fail hundreds of times a second, and a tool call must not wait for the
database. A group's count and its newest samples are merged in the process and written in one transaction per
flush, with increments that add up across processes. While the database is down what is held stays (at most
``MAX_GROUPS`` groups; beyond that new groups are counted in the tallies only) and the next flush writes it. What a
killed process held unwritten (one flush interval's worth) is lost: the inbox is a to-do list of texts to write
rules for, and a failure that keeps happening comes back with its next occurrence.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, close_old_connections, transaction
from django.db.models import F, Model
from django.db.models.functions import Greatest
from prometheus_client import Counter

from errcatalog.background import OnDemandThread
from errcatalog.gateway.models import UpstreamFailureGroup, UpstreamFailureSample, UpstreamFailureTally
from errcatalog.gateway.signatures import group_key, signature

logger = logging.getLogger("errcatalog.gateway.inbox")

FLUSH_SECONDS = 1.0
# Distinct groups held between flushes (and while the database is down): a bound on memory, far above what a
# flush interval brings in practice.
MAX_GROUPS = 1000
# Samples kept per group, newest first: enough to preview a rule against, few enough to read.
SAMPLES_PER_GROUP = 5

UPSTREAM_FAILURES = Counter(
    "errcatalog_upstream_failures",
    "Failures of upstream MCP servers' calls, by upstream and whether a specific rule classified them "
    '(classified="false": the failure fell to a fallback code and is in admin\'s inbox).',
    ["upstream", "classified"],
)


@dataclass(slots=True)
class _Group:
    upstream: str
    tool: str
    kind: str
    signature: str
    count: int = 0
    withheld: int = 0
    first: float = 0.0
    last: float = 0.0
    samples: deque[tuple[str, float]] = field(default_factory=lambda: deque(maxlen=SAMPLES_PER_GROUP))


class _Inbox:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, _Group] = {}
        self._tallies: dict[tuple[float, str, bool], int] = {}
        self._flusher = OnDemandThread("failure-inbox", self._run)
        self._write_lock = threading.Lock()
        self._failing = False  # the last write failed (its warning was logged)

    def note(self, upstream: str, tool: str, kind: str, text: str, *, classified: bool, withheld: bool = False) -> None:
        try:
            UPSTREAM_FAILURES.labels(upstream, "true" if classified else "false").inc()
            now = time.time()
            hour = now - now % 3600
            grouped = None if classified and not withheld else signature(text)
            with self._lock:
                tally = (hour, upstream, classified)
                self._tallies[tally] = self._tallies.get(tally, 0) + 1
                if grouped is not None:
                    self._add(upstream, tool, kind, grouped, text, now, withheld=withheld)
            self._flusher.ensure()
        except Exception:  # a tool call's answer must never fail because its bookkeeping did
            logger.exception("Could not note an upstream failure for the inbox")

    def _add(self, upstream: str, tool: str, kind: str, sig: str, text: str, now: float, *, withheld: bool) -> None:
        key = group_key(upstream, tool, kind, sig)
        group = self._groups.get(key)
        if group is None:
            if len(self._groups) >= MAX_GROUPS:
                return
            group = self._groups[key] = _Group(upstream, tool, kind, sig, first=now)
        group.count += 1
        group.withheld += withheld
        group.last = now
        if not any(sample == text for sample, _ in group.samples):
            group.samples.append((text, now))

    def flush(self) -> bool:
        with self._write_lock:
            with self._lock:
                groups, self._groups = self._groups, {}
                tallies, self._tallies = self._tallies, {}
            if not groups and not tallies:
                return True
            try:
                _write(groups, tallies)
            except Exception:  # the database is down or refused: keep everything for the next flush
                # Once per outage: the flusher tries again every second.
                if not self._failing:
                    logger.warning(
                        "Could not write the inbox of upstream failures; keeping it for the next try", exc_info=True
                    )
                self._failing = True
                with self._lock:
                    self._merge_back(groups, tallies)
                return False
            if self._failing:
                logger.warning("The inbox of upstream failures is written again")
                self._failing = False
            return True

    def _merge_back(self, groups: dict[str, _Group], tallies: dict[tuple[float, str, bool], int]) -> None:
        for tally, count in tallies.items():
            self._tallies[tally] = self._tallies.get(tally, 0) + count
        for key, held in groups.items():
            newer = self._groups.get(key)
            if newer is None:
                if len(self._groups) < MAX_GROUPS:
                    self._groups[key] = held
                continue
            newer.count += held.count
            newer.withheld += held.withheld
            newer.first = min(newer.first, held.first)
            samples = list(held.samples) + list(newer.samples)
            newer.samples = deque(samples[-SAMPLES_PER_GROUP:], maxlen=SAMPLES_PER_GROUP)

    def reset(self) -> None:
        with self._lock:
            self._groups = {}
            self._tallies = {}
            self._failing = False

    def _run(self) -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            self.flush()
            # The flusher's own connection, as Django closes a request's: not kept past its age or once broken. A
            # caller's connection (a test's, a shutdown's) is the caller's to close.
            close_old_connections()


def _moment(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=UTC)


@transaction.atomic
def _write(groups: dict[str, _Group], tallies: dict[tuple[float, str, bool], int]) -> None:
    for (hour, upstream, classified), count in tallies.items():
        cell = {"hour": _moment(hour), "upstream": upstream, "classified": classified}
        _add_to(UpstreamFailureTally, cell, {"count": F("count") + count}, {"count": count})
    for key, held in groups.items():
        group = _add_to(
            UpstreamFailureGroup,
            {"key": key},
            {
                "count": F("count") + held.count,
                "withheld": F("withheld") + held.withheld,
                "last_seen": Greatest(F("last_seen"), _moment(held.last)),
            },
            {
                "upstream": held.upstream,
                "tool": held.tool,
                "kind": held.kind,
                "signature": held.signature,
                "count": held.count,
                "withheld": held.withheld,
                "first_seen": _moment(held.first),
                "last_seen": _moment(held.last),
            },
        )
        UpstreamFailureSample.objects.bulk_create(
            UpstreamFailureSample(group_id=group, text=text, seen_at=_moment(seen)) for text, seen in held.samples
        )
        kept = UpstreamFailureSample.objects.filter(group_id=group).values_list("pk", flat=True)[:SAMPLES_PER_GROUP]
        UpstreamFailureSample.objects.filter(group_id=group).exclude(pk__in=list(kept)).delete()


def _add_to(model: type[Model], lookup: dict[str, Any], increments: dict[str, Any], new: dict[str, Any]) -> int:
    """Add ``increments`` to the row ``lookup`` finds, or create it with ``new``; returns its pk.

    Another process may create the same row between the two: its insert wins, and this one adds to it."""
    rows = model._default_manager.filter(**lookup)
    for _ in range(2):
        if rows.update(**increments):
            return rows.values_list("pk", flat=True).get()
        try:
            with transaction.atomic():
                return model._default_manager.create(**lookup, **new).pk
        except IntegrityError:
            continue
    raise IntegrityError("an inbox row was created and removed while being written")


_inbox = _Inbox()
note = _inbox.note
flush = _inbox.flush
reset = _inbox.reset


@atexit.register
def _flush_at_exit() -> None:
    # A server stopping (SIGTERM) writes what it holds; a killed one loses at most one flush interval's worth.
    _inbox.flush()

"""Rollups: per time bucket x tool x code x variant x client, the counts the dashboard and metrics API read.

Calls, errors, interactive errors, retries and latency come from the events that happened in the bucket. Episode
counts (opened, recovered, recovered at the first retry, exhausted, abandoned, abandoned without any retry) are
credited to the bucket, tool, code, variant and client of the error that opened the episode, so an episode that
ends later changes the bucket it started in. So is a recovered episode's resolution time (the question
protocol's "user resolution time": first failed call to recovering call), binned into ``resolution_histogram``.

Interface (fixed):
- ``compute_due() -> int``: recompute every bucket whose events or episodes changed since the last run, plus the
  current bucket; returns how many buckets were written.
- ``recompute_bucket(start: datetime) -> int``: recompute one bucket whole (idempotent); returns rows written.
- ``LATENCY_BOUNDS_MS``: upper bounds of the latency histogram bins stored in ``Rollup.latency_histogram``.
- ``RESOLUTION_BOUNDS_SECONDS``: the same for resolution times (``Rollup.resolution_histogram``).

Every bucket's rows are also written to ``RollupSummary`` (histogram bins as columns, which the database sums
several times faster than JSON elements) and summed there per UTC day, which 7- and 30-day windows read.

Everything is aggregated by the database (GROUP BY), never by looping over events in Python, so a bucket's cost
depends on its number of distinct cells, not on its number of events. The SQL is the ORM's, portable to SQLite
and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, IntegerField, Q, QuerySet, Sum, Value, When
from django.db.models.functions import TruncHour
from django.utils import timezone

from errcatalog.outcomes.models import (
    LATENCY_BINS,
    RESOLUTION_BINS,
    Episode,
    OutcomeRecord,
    Rollup,
    RollupState,
    RollupSummary,
)


def _log_bounds(low: float, high: float, bins: int = 40) -> tuple[float, ...]:
    """``bins`` log-spaced upper bounds from ``low`` to ``high``, rounded to 3 significant digits.

    Latency: 0.1 ms to 60 s, about 7 bins per decade; percentiles read from these bins are off by at most half a
    bin, about ±20 %, at any scale.
    """
    ratio = (high / low) ** (1 / (bins - 1))
    return tuple(float(f"{low * ratio**i:.3g}") for i in range(bins))


# A latency above the last bound lands in one extra overflow bin, so a histogram has len(bounds) + 1 counts.
LATENCY_BOUNDS_MS: tuple[float, ...] = _log_bounds(0.1, 60_000.0)
HISTOGRAM_SIZE = len(LATENCY_BOUNDS_MS) + 1
assert HISTOGRAM_SIZE == LATENCY_BINS, "RollupSummary has one column per bin"
# Resolution times: 0.1 s (an agent retrying at once) to a day (a person answering a question late, with a long
# retry window), about 6.6 bins per decade, so p50/p90 are within about ±20 % too. Longer lands in the overflow bin.
RESOLUTION_BOUNDS_SECONDS: tuple[float, ...] = _log_bounds(0.1, 86_400.0)
RESOLUTION_HISTOGRAM_SIZE = len(RESOLUTION_BOUNDS_SECONDS) + 1
assert RESOLUTION_HISTOGRAM_SIZE == RESOLUTION_BINS, "RollupSummary has one column per bin"
Span = RollupSummary.Span
JOB_NAME = "rollups"
# Ingest stamps ``ingested_at`` before its transaction commits, so a run also looks this far before its last
# watermark: rows committed late by a slow ingest transaction are still picked up (recomputing is idempotent).
COMMIT_LAG = timedelta(minutes=2)

_DIMENSIONS = ("tool", "code", "variant", "client", "upstream")
_EVENT_COUNTERS = ("calls", "errors", "interactive_errors", "retries", "latency_sum_ms")
_EPISODE_COUNTERS: tuple[str, ...] = ("episodes", "recovered", "first_retry_recovered", "exhausted", "abandoned")
_EPISODE_COUNTERS += ("abandoned_without_retry",)

Cell = tuple[str, str, str, str, str]
DAY = timedelta(days=1)
# Summed by ``summed_rows``: every counter of a rollup row.
COUNTERS = _EVENT_COUNTERS[:-1] + _EPISODE_COUNTERS


def bucket_seconds() -> int:
    return settings.OUTCOMES["BUCKET_SECONDS"]


def bucket_start(moment: datetime) -> datetime:
    """The start (UTC) of the bucket holding ``moment``; buckets are aligned to the Unix epoch."""
    seconds = bucket_seconds()
    return datetime.fromtimestamp(int(moment.timestamp()) // seconds * seconds, tz=UTC)


def recompute_bucket(start: datetime) -> int:
    """Replace the bucket's rollup rows with fresh ones from events and episodes, in one transaction.

    Recomputing gives identical rows however often it runs. Returns the number of rows written.
    """
    with transaction.atomic():
        # Serialises recomputations with each other (and with compute_due), so two workers never interleave
        # their delete and insert of the same bucket.
        state = _lock_state()
        written = _recompute_bucket(bucket_start(start))
        _recompute_day(day_start(start))
        # Rollups changed: readers that cache what they computed from them (metrics) see a new generation.
        state.save(update_fields=["updated_at"])
    return written


def _recompute_bucket(start: datetime) -> int:
    end = start + timedelta(seconds=bucket_seconds())
    with transaction.atomic():
        cells = sorted(_aggregate(start, end).items())
        rows = [Rollup(bucket=start, **dict(zip(_DIMENSIONS, cell, strict=True)), **values) for cell, values in cells]
        Rollup.objects.filter(bucket=start).delete()
        Rollup.objects.bulk_create(rows, batch_size=500)
        # The metrics' reading copy of the same rows, with the histogram's bins as columns.
        summaries = [
            _summary(Span.BUCKET, start, dict(zip(_DIMENSIONS, cell, strict=True)) | values) for cell, values in cells
        ]
        RollupSummary.objects.filter(span=Span.BUCKET, bucket=start).delete()
        RollupSummary.objects.bulk_create(summaries, batch_size=500)
    return len(rows)


def _summary(span: str, bucket: datetime, values: dict[str, Any]) -> RollupSummary:
    values = dict(values)
    histogram = values.pop("latency_histogram")
    bins = {f"latency_bin_{index}": count for index, count in enumerate(histogram)}
    resolution = values.pop("resolution_histogram")
    bins |= {f"resolution_bin_{index}": count for index, count in enumerate(resolution)}
    return RollupSummary(span=span, bucket=bucket, **values, **bins)


def compute_due(now: datetime | None = None) -> int:
    """Recompute the buckets that changed since the stored watermark, and the current one; returns their number."""
    now = now or timezone.now()
    with transaction.atomic():
        state = _lock_state()
        starts = {bucket_start(now)}
        if state.watermark is None:
            starts |= _changed_buckets(since=None)
        else:
            starts |= _changed_buckets(since=state.watermark - COMMIT_LAG)
        for start in sorted(starts):
            _recompute_bucket(start)
        for day in sorted({day_start(start) for start in starts}):
            _recompute_day(day)
        state.watermark = now
        state.save(update_fields=["watermark", "updated_at"])
    return len(starts)


def day_start(moment: datetime) -> datetime:
    """Midnight (UTC) of the day holding ``moment``. A bucket counts in the day it starts in."""
    return datetime.fromtimestamp(int(moment.timestamp()) // 86400 * 86400, tz=UTC)


def summed_rows(rows: QuerySet[RollupSummary], dimensions: Iterable[str]) -> Iterable[dict[str, Any]]:
    """One GROUP BY over ``RollupSummary`` rows: every counter and every histogram bin summed by the database."""
    sums = {f"s_{name}": Sum(name) for name in COUNTERS}
    sums["s_latency_sum_ms"] = Sum("latency_sum_ms")
    bins = {f"h_{index}": Sum(f"latency_bin_{index}") for index in range(HISTOGRAM_SIZE)}
    bins |= {f"r_{index}": Sum(f"resolution_bin_{index}") for index in range(RESOLUTION_HISTOGRAM_SIZE)}
    for row in rows.values(*dimensions).annotate(**sums, **bins).order_by():
        out = {name: row[name] for name in dimensions}
        out.update({name: row[f"s_{name}"] or 0 for name in COUNTERS})
        out["latency_sum_ms"] = round(row["s_latency_sum_ms"] or 0.0, 3)
        out["latency_histogram"] = [int(row[f"h_{index}"] or 0) for index in range(HISTOGRAM_SIZE)]
        out["resolution_histogram"] = [int(row[f"r_{index}"] or 0) for index in range(RESOLUTION_HISTOGRAM_SIZE)]
        yield out


def _recompute_day(day: datetime) -> int:
    """Rewrite the day's summary rows as the sums of the summary rows of its buckets."""
    buckets = RollupSummary.objects.filter(span=Span.BUCKET, bucket__gte=day, bucket__lt=day + DAY)
    rows = [_summary(Span.DAY, day, values) for values in summed_rows(buckets, _DIMENSIONS)]
    rows.sort(key=lambda row: (row.tool, row.code, row.variant, row.client))
    with transaction.atomic():
        RollupSummary.objects.filter(span=Span.DAY, bucket=day).delete()
        RollupSummary.objects.bulk_create(rows, batch_size=500)
    return len(rows)


def generation() -> str | None:
    """Changes whenever rollup rows change (the job row's ``updated_at``); None before the first computation."""
    updated = RollupState.objects.filter(name=JOB_NAME).values_list("updated_at", flat=True).first()
    return updated.isoformat() if updated else None


def _lock_state() -> RollupState:
    RollupState.objects.get_or_create(name=JOB_NAME)
    return RollupState.objects.select_for_update().get(name=JOB_NAME)


def _changed_buckets(*, since: datetime | None) -> set[datetime]:
    """Buckets of events ingested, and start buckets of episodes touched, since ``since`` (everything if None).

    Every write of an episode (ingest, the abandoned-episode closer) sets its ``changed_at``.
    """
    if since is None:
        hours = set(_distinct_hours(OutcomeRecord.objects.all(), "occurred_at"))
        return _buckets_of(hours | set(_distinct_hours(Episode.objects.all(), "started_at")))
    events = OutcomeRecord.objects.filter(ingested_at__gte=since)
    changed = Episode.objects.filter(changed_at__gte=since)
    hours = set(_distinct_hours(events, "occurred_at")) | set(_distinct_hours(changed, "started_at"))
    return _buckets_of(hours)


def _buckets_of(hours: Iterable[datetime]) -> set[datetime]:
    return {start for hour in hours for start in _buckets_in_hour(hour)}


def _distinct_hours(queryset, field: str) -> Iterable[datetime]:
    # TruncHour is portable (SQLite and PostgreSQL); buckets are then derived from hours in Python.
    return queryset.annotate(hour=TruncHour(field, tzinfo=UTC)).values_list("hour", flat=True).distinct()


def _buckets_in_hour(hour: datetime) -> list[datetime]:
    """Every bucket overlapping the hour starting at ``hour`` (one when buckets are an hour or longer)."""
    seconds = bucket_seconds()
    first = bucket_start(hour)
    end = hour + timedelta(hours=1)
    starts = []
    current = first
    while current < end:
        starts.append(current)
        current += timedelta(seconds=seconds)
    return starts


def _latency_bin() -> Case:
    """The histogram bin of an event's latency, as SQL: the first bound it does not exceed, else the overflow."""
    whens = [When(latency_ms__lte=bound, then=Value(index)) for index, bound in enumerate(LATENCY_BOUNDS_MS)]
    return Case(*whens, default=Value(len(LATENCY_BOUNDS_MS)), output_field=IntegerField())


NO_RESOLUTION = -1


def _resolution_bin() -> Case:
    """The resolution-time bin of an episode, as SQL; ``NO_RESOLUTION`` for an episode that did not recover."""
    whens = [When(resolution_seconds__isnull=True, then=Value(NO_RESOLUTION))]
    whens += [
        When(resolution_seconds__lte=bound, then=Value(index)) for index, bound in enumerate(RESOLUTION_BOUNDS_SECONDS)
    ]
    return Case(*whens, default=Value(len(RESOLUTION_BOUNDS_SECONDS)), output_field=IntegerField())


def _aggregate(start: datetime, end: datetime) -> dict[Cell, dict[str, Any]]:
    """Counters per cell of the bucket [start, end): two GROUP BY queries, merged by cell."""
    cells: dict[Cell, dict[str, Any]] = {}

    def cell_values(row: dict[str, Any]) -> dict[str, Any]:
        tool, code, variant, client, upstream = (row[name] or "" for name in _DIMENSIONS)
        cell = (tool, code, variant, client, upstream)
        if cell not in cells:
            cells[cell] = {name: 0 for name in _EVENT_COUNTERS + _EPISODE_COUNTERS}
            cells[cell]["latency_sum_ms"] = 0.0
            cells[cell]["latency_histogram"] = [0] * HISTOGRAM_SIZE
            cells[cell]["resolution_histogram"] = [0] * RESOLUTION_HISTOGRAM_SIZE
        return cells[cell]

    error = Q(outcome="error")
    event_rows = (
        OutcomeRecord.objects.filter(occurred_at__gte=start, occurred_at__lt=end)
        .annotate(latency_bin=_latency_bin())
        .values(*_DIMENSIONS, "latency_bin")
        .annotate(
            n_calls=Count("pk"),
            n_errors=Count("pk", filter=error),
            n_interactive_errors=Count("pk", filter=error & Q(interactive=True)),
            n_retries=Count("pk", filter=Q(attempt__gte=1)),
            n_latency_sum_ms=Sum("latency_ms"),
        )
        .order_by()
    )
    for row in event_rows:
        values = cell_values(row)
        for name in _EVENT_COUNTERS:
            values[name] += row[f"n_{name}"] or 0
        values["latency_histogram"][row["latency_bin"]] += row["n_calls"]

    ending = Episode.Ending
    abandoned = Q(ending=ending.ABANDONED)
    recovered = Q(ending=ending.RECOVERED)
    episode_rows = (
        Episode.objects.filter(started_at__gte=start, started_at__lt=end)
        .annotate(resolution_bin=_resolution_bin())
        .values(*_DIMENSIONS, "resolution_bin")
        .annotate(
            n_episodes=Count("pk"),
            n_recovered=Count("pk", filter=recovered),
            n_first_retry_recovered=Count("pk", filter=recovered & Q(recovered_at_attempt=1)),
            n_exhausted=Count("pk", filter=Q(ending=ending.EXHAUSTED)),
            n_abandoned=Count("pk", filter=abandoned),
            n_abandoned_without_retry=Count("pk", filter=abandoned & Q(retries=0)),
        )
        .order_by()
    )
    for row in episode_rows:
        values = cell_values(row)
        for name in _EPISODE_COUNTERS:
            values[name] += row[f"n_{name}"]
        if row["resolution_bin"] != NO_RESOLUTION:
            values["resolution_histogram"][row["resolution_bin"]] += row["n_recovered"]
    for values in cells.values():
        values["latency_sum_ms"] = round(values["latency_sum_ms"], 3)
    return cells

"""The numbers the dashboard and ``GET /api/v1/metrics/`` show: from the rollups, except the windows of up to
``MINUTE_WINDOW_MAX``, which read the outcome events and episodes themselves (``reads_events``).

Interface (fixed): ``compute_metrics(window="24h", *, tool=None, code=None, client=None, variant=None,
upstream=None, now=None)`` returns plain JSON-ready data:

    {
      "window": {"name": "24h", "start": ISO, "end": ISO, "bucket_seconds": 3600},
      "filters": {"tool": None, "code": None, "client": None, "variant": None, "upstream": None},
      "targets": {"retry_success_rate": 0.6, "interactive_error_rate": 0.8},
      "totals": ROW,
      "series": [{"bucket": ISO, **ROW}, ...],              # one per bucket in the window, oldest first
      "breakdowns": {"code": [{"key": ..., **ROW}], "tool": [...], "client": [...], "upstream": [...],
                     "variant": [{"key": "CODE/variant", "code": ..., "variant": ..., **ROW}]},
      "variant_comparison": [
        {"code": ..., "variants": [{"variant": ..., "episodes": n, "recovered": n, "retry_success_rate": x,
                                    "ci_low": x, "ci_high": x}],
         "best": name | None, "p_value": x | None, "significant": bool, "verdict": "sentence"}
      ],
      "recent_episodes": [{"id", "tool", "upstream", "code", "variant", "client", "started_at", "ended_at",
                           "ending", "retries", "recovered_at_attempt", "resolution_seconds", "sentry_event_id",
                           "sentry_url"}],
    }

ROW = {"calls", "errors", "error_rate", "interactive_errors", "interactive_error_rate", "retries", "episodes",
"recovered", "exhausted", "abandoned", "retry_success_rate", "first_retry_success_rate", "latency_p50_ms",
"latency_p95_ms", "resolution_p50_seconds", "resolution_p90_seconds"}; a rate is None when its denominator is 0.
Added fields: ROW also has "first_retry_recovered", "abandoned_without_retry" and "retried_episodes" (the
denominator of both retry rates); a variant in "variant_comparison" also has "first_retry_recovered"; the
comparison also names its "runner_up"; a recent episode also has "resolution_seconds". The "upstream" filter and
breakdown (the gateway's upstream MCP servers, by name) count only calls to upstream tools: the breakdown has no
row for this project's own tools.

Definitions (the dashboard, the API and the admin's variant column all use these):

- ``error_rate`` = errors / calls.
- ``interactive_error_rate`` = interactive_errors / errors: the share of errors rendered as a question or asked
  through an elicitation (target > 80 %).
- ``retried_episodes`` = recovered + exhausted + abandoned - abandoned_without_retry: episodes that were retried
  at least once and have ended. Open episodes and errors nobody retried say nothing about the wording's effect.
- ``retry_success_rate`` = recovered / retried_episodes (target > 60 %).
- ``first_retry_success_rate`` = first_retry_recovered / retried_episodes.
- ``latency_p50_ms``/``latency_p95_ms``: read from the summed latency histograms (log-spaced bins, interpolated
  within a bin), so they are accurate to a fraction of a bin; None without calls.
- ``resolution_p50_seconds``/``resolution_p90_seconds``: the question protocol's **user resolution time**, the
  median and 90th percentile over recovered episodes of the time from the episode's first failed call to the call that
  recovered it (the successful retry), in seconds. Read from the summed resolution histograms of the rollups
  (``RESOLUTION_BOUNDS_SECONDS``, the same log-spaced interpolation), credited like the episodes' other counts to
  the bucket, code, variant, tool and client of the opening error; None without a recovered episode. Episodes
  that were exhausted or abandoned have no resolution time: they count in the retry success rate instead.

Episodes count in the bucket (and under the code, variant, tool, client and upstream) of the error that opened them.
A window ends with the current bucket, and its bucket size follows its length so that its chart has tens of points:

- windows up to ``MINUTE_WINDOW_MAX`` (the "1h" window) have one point per UTC minute ("bucket_seconds": 60): the
  current minute and the 59 before it. Rollup buckets (an hour by default) would draw a single bar, so these
  windows read the outcome events and episodes themselves, through the rollups' own aggregation
  (``rollups.aggregate``), with the events' and episodes' time indexes: up to date the moment an event is
  ingested, without waiting for the rollup job;
- "24h" reads the rollup buckets: the current hourly bucket and the 23 before it;
- the 7- and 30-day windows read the daily summaries and have one series point per UTC day ("bucket_seconds":
  86400): the current day and the 6 or 29 before it.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import F, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from errcatalog.dependencies import DATABASE, DATABASE_ERRORS, REDIS, REDIS_ERRORS
from errcatalog.outcomes import stats
from errcatalog.outcomes.events import LEGACY_REPORTER_CLIENT, REPORTER_CLIENT_PREFIX, reporter_client
from errcatalog.outcomes.models import Episode, OutcomeRecord, RollupSummary
from errcatalog.outcomes.rollups import (
    COUNTERS,
    LATENCY_BOUNDS_MS,
    MINUTE,
    RESOLUTION_BOUNDS_SECONDS,
    aggregate,
    bucket_seconds,
    bucket_start,
    day_start,
    generation,
    summed_rows,
)

WINDOWS = {"1h": 3600, "24h": 24 * 3600, "7d": 7 * 24 * 3600, "30d": 30 * 24 * 3600}
# Windows at least this long read the daily rollups.
DAILY_FROM_SECONDS = 7 * 24 * 3600
# Windows at most this long read the events in minute buckets (at most 180 points; an hour of events is what the
# rollup job aggregates per bucket anyway).
MINUTE_WINDOW_MAX = 3 * 3600
MINUTE_SECONDS = 60
# The targets: more than 60 % of retried episodes recover; more than 80 % of errors are interactive.
TARGETS = {"retry_success_rate": 0.6, "interactive_error_rate": 0.8}
RECENT_EPISODES = 20
# Entries of an older rollup generation are never read again (the key names the generation); they expire.
CACHE_SECONDS = 600
FILTERS = ("tool", "code", "client", "variant", "upstream")
UNAVAILABLE_CONSEQUENCE = "the metrics API and the dashboard answer 503 until it is back"


class MetricsStoreUnavailable(RuntimeError):
    """The metrics cannot be read, or would be silently out of date: Redis or the database is unreachable.

    Without Redis, tool calls are still served but their outcome events wait in each web process's memory
    instead of reaching the database (the Redis stream they go through is gone), so numbers read now
    would be stale without saying so. Without the database there is nothing to read. The message names which
    (a fixed word, never an error text).
    """


Totals = dict[str, Any]


def compute_metrics(
    window: str = "24h",
    *,
    tool: str | None = None,
    code: str | None = None,
    client: str | None = None,
    variant: str | None = None,
    upstream: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The metrics of ``window`` (one of ``WINDOWS``; anything else raises ValueError), optionally filtered.

    Raises ``MetricsStoreUnavailable`` while Redis (when configured) or the database cannot be reached.
    """
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}")
    return _guarded(
        lambda: _compute_metrics(
            window, tool=tool, code=code, client=client, variant=variant, upstream=upstream, now=now
        )
    )


def _guarded[T](read: Callable[[], T]) -> T:
    """``read()``, raising ``MetricsStoreUnavailable`` while Redis (when configured) or the database is away."""
    uses_redis = bool(settings.REDIS_URL)
    if uses_redis and not REDIS.available():
        raise MetricsStoreUnavailable("Redis")
    try:
        result = read()
    except REDIS_ERRORS as exc:
        REDIS.failed(exc)
        REDIS.degraded(UNAVAILABLE_CONSEQUENCE)
        raise MetricsStoreUnavailable("Redis") from None
    except DATABASE_ERRORS as exc:
        DATABASE.failed(exc)
        DATABASE.degraded(UNAVAILABLE_CONSEQUENCE)
        raise MetricsStoreUnavailable("the database") from None
    if uses_redis:
        REDIS.succeeded()
    return result


def _compute_metrics(
    window: str,
    *,
    tool: str | None,
    code: str | None,
    client: str | None,
    variant: str | None,
    upstream: str | None,
    now: datetime | None,
) -> dict[str, Any]:
    start, end, step = window_bounds(window, now)
    filters = {"tool": tool, "code": code, "client": client, "variant": variant, "upstream": upstream}
    window_info = {"name": window, "start": start.isoformat(), "end": end.isoformat(), "bucket_seconds": step}
    active = {k: v for k, v in filters.items() if v}
    # What is read is the same until what it is read from changes: computed once per generation of the rollups
    # (or of the events, for minute windows) and window and filters, shared by the web processes through the
    # cache. Episodes are read fresh.
    current = _events_generation() if reads_events(window) else generation()
    key = _cache_key(window_info, filters, current)
    # Read even before the first rollup (nothing is stored under that key then): every metrics read touches
    # Redis, so none is answered while Redis is away (see ``MetricsStoreUnavailable``).
    from_rollups = cache.get(key)
    if from_rollups is None:
        if reads_events(window):
            from_rollups = _from_events(start, end, active)
        else:
            span = RollupSummary.Span.DAY if step >= 86400 else RollupSummary.Span.BUCKET
            rows = RollupSummary.objects.filter(span=span, bucket__gte=start, bucket__lt=end, **active)
            from_rollups = _from_rollups(rows, start, end, step)
        if current:
            cache.set(key, from_rollups, CACHE_SECONDS)
    return {
        "window": window_info,
        "filters": filters,
        "targets": dict(TARGETS),
        **from_rollups,
        "recent_episodes": _recent_episodes(start, end, filters),
    }


def reads_events(window: str) -> bool:
    """Whether ``window`` is read from the events in minute buckets rather than from the rollups."""
    return WINDOWS[window] <= MINUTE_WINDOW_MAX


def window_bounds(window: str, now: datetime | None = None) -> tuple[datetime, datetime, int]:
    """``(start, end, bucket_seconds)`` of ``window`` at ``now``: it ends with the bucket holding ``now``."""
    now = now or timezone.now()
    if reads_events(window):
        step = MINUTE_SECONDS
        end = datetime.fromtimestamp(int(now.timestamp()) // step * step + step, tz=UTC)
    elif WINDOWS[window] >= DAILY_FROM_SECONDS:
        step, end = 86400, day_start(now) + timedelta(days=1)
    else:
        step = bucket_seconds()
        end = bucket_start(now) + timedelta(seconds=step)
    return end - timedelta(seconds=WINDOWS[window]), end, step


def filter_values(window: str, *, now: datetime | None = None, limit: int = 200) -> dict[str, list[str]]:
    """For each filter (``FILTERS``), the values recorded in ``window``, A to Z, at most ``limit`` of each.

    Read from where the window's numbers come from: windows read in minutes (``reads_events``) from their events
    and episodes, a DISTINCT query over each one's time index; others one DISTINCT query per filter over the
    window's rollup rows (indexed by span and bucket), whose number grows with buckets and distinct cells, not
    with events. Cached as the numbers are, per generation of what they are read from. Raises
    ``MetricsStoreUnavailable`` as ``compute_metrics`` does.
    """
    start, end, step = window_bounds(window, now)

    def read() -> dict[str, list[str]]:
        current = _events_generation() if reads_events(window) else generation()
        window_info = {"name": window, "start": start.isoformat(), "end": end.isoformat(), "limit": limit}
        key = _cache_key(window_info, {}, current).replace(":metrics:", ":filter-values:")
        values = cache.get(key)
        if values is None:
            values = _filter_values(window, start, end, step, limit)
            if current:
                cache.set(key, values, CACHE_SECONDS)
        return values

    return _guarded(read)


def _filter_values(window: str, start: datetime, end: datetime, step: int, limit: int) -> dict[str, list[str]]:
    if reads_events(window):
        seen: dict[str, set[str]] = {name: set() for name in FILTERS}
        events = OutcomeRecord.objects.filter(occurred_at__gte=start, occurred_at__lt=end)
        opened = Episode.objects.filter(started_at__gte=start, started_at__lt=end)
        for rows in (events, opened):
            for cell in rows.values_list(*FILTERS).distinct().order_by():
                for name, value in zip(FILTERS, cell, strict=True):
                    if value:
                        seen[name].add(value)
        return {name: sorted(values)[:limit] for name, values in seen.items()}
    span = RollupSummary.Span.DAY if step >= 86400 else RollupSummary.Span.BUCKET
    summaries = RollupSummary.objects.filter(span=span, bucket__gte=start, bucket__lt=end)
    return {
        name: list(summaries.exclude(**{name: ""}).order_by(name).values_list(name, flat=True).distinct()[:limit])
        for name in FILTERS
    }


def ever_recorded(name: str, value: str) -> bool:
    """Whether any rolled-up outcome has ``value`` as its ``name`` (one of ``FILTERS``): a filter value that exists.

    Reads the daily summaries (a row per day and cell, however many events). Raises ``MetricsStoreUnavailable``.
    """
    if name not in FILTERS:
        raise ValueError(f"name must be one of {', '.join(FILTERS)}")
    return _guarded(lambda: RollupSummary.objects.filter(span=RollupSummary.Span.DAY, **{name: value}).exists())


def recorded_before(moment: datetime) -> bool:
    """Whether a call or an episode was recorded before ``moment`` (two lookups on the time indexes).

    Raises ``MetricsStoreUnavailable``.
    """
    return _guarded(
        lambda: (
            OutcomeRecord.objects.filter(occurred_at__lt=moment).exists()
            or Episode.objects.filter(started_at__lt=moment).exists()
        )
    )


def _events_generation() -> str:
    """Changes whenever an event is ingested or an episode changes (both columns indexed: two index lookups).

    The window's start is part of the cache key too, so what was cached is read again for a minute at most.
    """
    latest = OutcomeRecord.objects.aggregate(at=Max("ingested_at"))["at"]
    changed = Episode.objects.aggregate(at=Max("changed_at"))["at"]
    return f"events:{latest}:{changed}"


def _from_events(start: datetime, end: datetime, filters: Mapping[str, str]) -> dict[str, Any]:
    """As ``_from_rollups``, from the events and episodes of [start, end) in minute buckets (four GROUP BYs)."""
    cells = [
        dict(zip(FILTERS, cell, strict=True)) | values
        for cell, values in aggregate(start, end, group=FILTERS, filters=dict(filters)).items()
    ]
    minutes = aggregate(start, end, group=(MINUTE,), filters=dict(filters))
    by_minute = {cell[0]: values for cell, values in minutes.items()}
    return {
        "totals": metric_row(_merge(cells)),
        "series": _series(by_minute, start, end, MINUTE_SECONDS),
        "breakdowns": _breakdowns(cells),
        "variant_comparison": _variant_comparison(cells),
    }


def _from_rollups(rows: QuerySet, start: datetime, end: datetime, step: int) -> dict[str, Any]:
    """Two GROUP BY queries (per cell, per bucket); totals and breakdowns are sums of the cells."""
    cells = list(summed_rows(rows, ("tool", "code", "variant", "client", "upstream")))
    by_bucket = {row["bucket"]: row for row in summed_rows(rows, ("bucket",))}
    return {
        "totals": metric_row(_merge(cells)),
        "series": _series(by_bucket, start, end, step),
        "breakdowns": _breakdowns(cells),
        "variant_comparison": _variant_comparison(cells),
    }


def _cache_key(window: Mapping[str, Any], filters: Mapping[str, str | None], current: str | None) -> str:
    identity = json.dumps([connection.settings_dict["NAME"], window, filters, current], sort_keys=True, default=str)
    # The version names the shape of what is cached: an entry written by older code (before resolution times, before
    # upstreams) is never read by newer code within the same rollup generation.
    return "errcatalog:metrics:v3:" + hashlib.sha256(identity.encode()).hexdigest()


def metric_row(sums: Mapping[str, Any]) -> dict[str, Any]:
    """Counters with the rates and percentiles derived from them (definitions in the module docstring)."""
    row: dict[str, Any] = {name: int(sums.get(name) or 0) for name in COUNTERS}
    retried = row["recovered"] + row["exhausted"] + row["abandoned"] - row["abandoned_without_retry"]
    row["retried_episodes"] = retried
    row["error_rate"] = _ratio(row["errors"], row["calls"])
    row["interactive_error_rate"] = _ratio(row["interactive_errors"], row["errors"])
    row["retry_success_rate"] = _ratio(row["recovered"], retried)
    row["first_retry_success_rate"] = _ratio(row["first_retry_recovered"], retried)
    histogram = sums.get("latency_histogram") or []
    row["latency_p50_ms"] = percentile(histogram, 0.50)
    row["latency_p95_ms"] = percentile(histogram, 0.95)
    resolution = sums.get("resolution_histogram") or []
    row["resolution_p50_seconds"] = percentile(resolution, 0.50, bounds=RESOLUTION_BOUNDS_SECONDS)
    row["resolution_p90_seconds"] = percentile(resolution, 0.90, bounds=RESOLUTION_BOUNDS_SECONDS)
    return row


def percentile(histogram: list[int], quantile: float, *, bounds: tuple[float, ...] = LATENCY_BOUNDS_MS) -> float | None:
    """The ``quantile`` of a histogram over ``bounds`` (latency by default); None when it is empty.

    Within a bin the value is interpolated geometrically (the bins are log-spaced); a quantile in the overflow
    bin is reported as the last bound.
    """
    total = sum(histogram)
    if total <= 0:
        return None
    target = quantile * total
    seen = 0
    for index, count in enumerate(histogram):
        if count and seen + count >= target:
            if index >= len(bounds):
                return bounds[-1]
            high = bounds[index]
            if index == 0:
                return high
            low = bounds[index - 1]
            return round(low * (high / low) ** ((target - seen) / count), 3)
        seen += count
    return bounds[-1]


def variant_retry_annotations(
    *, code_ref: str, variant_ref: str, days: int = 30, now: datetime | None = None
) -> dict[str, Subquery]:
    """Annotations giving each row of a variant queryset its recovered and retried episodes over ``days`` days.

    Correlated subqueries over the daily rollups, so a whole admin page of variants costs one query. The window
    is the same as the ``"30d"`` metrics window's (the current UTC day and the 29 before it); the variant is
    matched by code and name, so same-named variants of different locales share their numbers.
    """
    since = day_start(now or timezone.now()) - timedelta(days=days - 1)
    rows = RollupSummary.objects.filter(
        span=RollupSummary.Span.DAY, code=OuterRef(code_ref), variant=OuterRef(variant_ref), bucket__gte=since
    )
    grouped = rows.order_by().values("code", "variant")
    retried = F("recovered") + F("exhausted") + F("abandoned") - F("abandoned_without_retry")
    return {
        "retry_recovered_30d": Subquery(grouped.annotate(n=Sum("recovered")).values("n")[:1]),
        "retry_episodes_30d": Subquery(grouped.annotate(n=Sum(retried)).values("n")[:1]),
    }


def variant_recoveries(
    code: str, *, days: int, now: datetime | None = None, counted_reporters: Iterable[int] | None = None
) -> list[stats.VariantResult]:
    """Each variant of ``code``: its retried-and-ended episodes over ``days`` days and how many recovered.

    Read from the daily rollups (the current UTC day and the ``days - 1`` before it), as the admin's retry success
    column and the dashboard's comparison are; same-named variants of different locales share their numbers.
    With ``counted_reporters`` (token ids), only calls errcatalog observed itself and those the listed tokens
    reported count: anyone else's reports are claims nobody checked.
    """
    since = day_start(now or timezone.now()) - timedelta(days=days - 1)
    retried = F("recovered") + F("exhausted") + F("abandoned") - F("abandoned_without_retry")
    cells = RollupSummary.objects.filter(span=RollupSummary.Span.DAY, code=code, bucket__gte=since)
    if counted_reporters is not None:
        cells = cells.filter(_observed_or_reported_by(counted_reporters))
    rows = cells.order_by().values("variant").annotate(episodes=Sum(retried), recovered=Sum("recovered"))
    return [stats.VariantResult(r["variant"], r["episodes"] or 0, r["recovered"] or 0) for r in rows]


def _observed_or_reported_by(reporters: Iterable[int]) -> Q:
    """Rollup rows of calls errcatalog served, or reported by one of ``reporters`` (token ids)."""
    reported = Q(client__startswith=REPORTER_CLIENT_PREFIX) | Q(client__regex=LEGACY_REPORTER_CLIENT)
    allowed = Q()
    for token_id in reporters:
        own = reporter_client(token_id, None)
        allowed |= Q(client=own) | Q(client__startswith=f"{own}/")
    return ~reported | allowed if allowed else ~reported


def sentry_url(event_id: str) -> str | None:
    """The Sentry page of an event from ``OUTCOMES["SENTRY_EVENT_URL"]``; None when unset or without an event."""
    template = settings.OUTCOMES.get("SENTRY_EVENT_URL") or ""
    if not template or not event_id:
        return None
    return template.replace("{event_id}", event_id)


def _merge(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Sums of the cells' counters and histograms (column-wise ``sum(zip(...))``: no per-bin Python loop)."""
    rows = list(rows)
    total: dict[str, Any] = {name: sum(row[name] for row in rows) for name in COUNTERS}
    for name in ("latency_histogram", "resolution_histogram"):
        histograms = [row[name] for row in rows]
        total[name] = [sum(column) for column in zip(*histograms, strict=True)] if histograms else []
    return total


def _series(by_bucket: Mapping[datetime, Mapping[str, Any]], start: datetime, end: datetime, step: int) -> list:
    series = []
    current = start
    while current < end:
        series.append({"bucket": current.isoformat(), **metric_row(by_bucket.get(current, {}))})
        current += timedelta(seconds=step)
    return series


def _breakdowns(cells: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows per code, tool, client, upstream and code/variant, most calls first (then most errors, then by name).
    Calls to this project's own tools have no upstream row."""
    out: dict[str, list[dict[str, Any]]] = {}
    for dimension in ("code", "tool", "client", "upstream"):
        groups: dict[str, list] = defaultdict(list)
        for cell in cells:
            if dimension != "upstream" or cell["upstream"]:
                groups[cell[dimension]].append(cell)
        out[dimension] = _sorted([{"key": key, **metric_row(_merge(rows))} for key, rows in groups.items()])
    variants: dict[tuple[str, str], list] = defaultdict(list)
    for cell in cells:
        if cell["code"]:  # successful calls have no code and no wording to compare
            variants[(cell["code"], cell["variant"])].append(cell)
    out["variant"] = _sorted(
        [
            {"key": f"{code}/{name}", "code": code, "variant": name, **metric_row(_merge(rows))}
            for (code, name), rows in variants.items()
        ]
    )
    return out


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: (-row["calls"], -row["errors"], row["key"]))


def _variant_comparison(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each code with at least two variants that have retried, ended episodes: which recovers more often."""
    per_code: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for cell in cells:
        if not cell["code"]:
            continue
        counts = per_code[cell["code"]][cell["variant"]]
        counts["retried"] += cell["recovered"] + cell["exhausted"] + cell["abandoned"] - cell["abandoned_without_retry"]
        counts["recovered"] += cell["recovered"]
        counts["first_retry_recovered"] += cell["first_retry_recovered"]
    comparisons = []
    for code, variants in sorted(per_code.items()):
        results = [
            stats.VariantResult(name, counts["retried"], counts["recovered"])
            for name, counts in sorted(variants.items())
            if counts["retried"] > 0
        ]
        if len(results) < 2:
            continue
        comparison = stats.compare_variants(results)
        rows = []
        for result in sorted(results, key=lambda r: (-(r.rate or 0.0), -r.episodes, r.variant)):
            low, high = stats.wilson_interval(result.recovered, result.episodes)
            rows.append(
                {
                    "variant": result.variant,
                    "episodes": result.episodes,
                    "recovered": result.recovered,
                    "first_retry_recovered": variants[result.variant]["first_retry_recovered"],
                    "retry_success_rate": result.rate,
                    "ci_low": round(low, 4),
                    "ci_high": round(high, 4),
                }
            )
        comparisons.append(
            {
                "code": code,
                "variants": rows,
                "best": comparison.best,
                "runner_up": comparison.runner_up,
                "p_value": None if comparison.p_value is None else round(comparison.p_value, 4),
                "significant": comparison.significant,
                "verdict": comparison.verdict,
            }
        )
    return comparisons


def _recent_episodes(start: datetime, end: datetime, filters: Mapping[str, str | None]) -> list[dict[str, Any]]:
    """The latest episodes that started in the window (Episode's started_at index serves the ORDER BY)."""
    lookup = Q(started_at__gte=start, started_at__lt=end)
    for name, value in filters.items():
        if value:
            lookup &= Q(**{name: value})
    fields: tuple[str, ...] = ("id", "tool", "upstream", "code", "variant", "client", "started_at", "ended_at")
    fields += ("ending", "retries")
    fields += ("recovered_at_attempt", "resolution_seconds", "sentry_event_id")
    episodes = Episode.objects.filter(lookup).order_by("-started_at", "-id").values(*fields)[:RECENT_EPISODES]
    return [
        {
            **episode,
            "started_at": episode["started_at"].isoformat(),
            "ended_at": episode["ended_at"].isoformat() if episode["ended_at"] else None,
            "sentry_url": sentry_url(episode["sentry_event_id"]),
        }
        for episode in episodes
    ]


def _ratio(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None

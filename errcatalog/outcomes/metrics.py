"""The numbers the dashboard and ``GET /api/v1/metrics/`` show, read from rollups only.

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
A window ends with the current bucket: "24h" is the current hourly bucket and the 23 before it. The 7- and 30-day
windows read the daily summaries and have one series point per UTC day ("bucket_seconds": 86400): the current day
and the 6 or 29 before it.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import F, OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from errcatalog.dependencies import DATABASE, DATABASE_ERRORS, REDIS, REDIS_ERRORS
from errcatalog.outcomes import stats
from errcatalog.outcomes.events import LEGACY_REPORTER_CLIENT, REPORTER_CLIENT_PREFIX, reporter_client
from errcatalog.outcomes.models import Episode, RollupSummary
from errcatalog.outcomes.rollups import (
    COUNTERS,
    LATENCY_BOUNDS_MS,
    RESOLUTION_BOUNDS_SECONDS,
    bucket_seconds,
    bucket_start,
    day_start,
    generation,
    summed_rows,
)

WINDOWS = {"1h": 3600, "24h": 24 * 3600, "7d": 7 * 24 * 3600, "30d": 30 * 24 * 3600}
# Windows at least this long read the daily rollups.
DAILY_FROM_SECONDS = 7 * 24 * 3600
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
    uses_redis = bool(settings.REDIS_URL)
    if uses_redis and not REDIS.available():
        raise MetricsStoreUnavailable("Redis")
    try:
        metrics = _compute_metrics(
            window, tool=tool, code=code, client=client, variant=variant, upstream=upstream, now=now
        )
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
    return metrics


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
    now = now or timezone.now()
    if WINDOWS[window] >= DAILY_FROM_SECONDS:
        span, step, end = RollupSummary.Span.DAY, 86400, day_start(now) + timedelta(days=1)
    else:
        step = bucket_seconds()
        span, end = RollupSummary.Span.BUCKET, bucket_start(now) + timedelta(seconds=step)
    start = end - timedelta(seconds=WINDOWS[window])
    filters = {"tool": tool, "code": code, "client": client, "variant": variant, "upstream": upstream}
    window_info = {"name": window, "start": start.isoformat(), "end": end.isoformat(), "bucket_seconds": step}
    # What is read from rollups is the same until they change: computed once per rollup generation (and
    # window and filters), shared by the web processes through the cache. Episodes are read fresh.
    current = generation()
    key = _cache_key(window_info, filters, current)
    # Read even before the first rollup (nothing is stored under that key then): every metrics read touches
    # Redis, so none is answered while Redis is away (see ``MetricsStoreUnavailable``).
    from_rollups = cache.get(key)
    if from_rollups is None:
        rows = RollupSummary.objects.filter(
            span=span, bucket__gte=start, bucket__lt=end, **{k: v for k, v in filters.items() if v}
        )
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

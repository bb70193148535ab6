"""The staff dashboard of outcomes: KPI tiles, charts, breakdowns, variant comparison and recent episodes.

The view is an adapter: it validates the query string, calls ``compute_metrics`` once and turns its JSON-ready
numbers into display rows (text plus a numeric sort key per cell), so the template only prints escaped values
and the page's script only reads data from ``json_script`` blocks and ``data-`` attributes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import wraps
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from errcatalog.access.selectors import client_display_names
from errcatalog.catalog.allocation import allocation_report
from errcatalog.gateway.selectors import FailureShare, upstream_exists, upstream_failure_share
from errcatalog.outcomes.metrics import (
    WINDOWS,
    MetricsStoreUnavailable,
    compute_metrics,
    ever_recorded,
    filter_values,
    recorded_before,
)
from errcatalog.outcomes.stats import SIGNIFICANCE

DEFAULT_WINDOW = "24h"
# While every recorded outcome is younger than this (a new installation's first hour), the page opens on this
# window instead: 24 hourly buckets would show a single bar, the minutes of the last hour show the calls just made.
FIRST_HOUR_WINDOW = "1h"
# The page reloads its numbers this often while it is visible (dashboard.js); the rollup job runs every 30 s.
REFRESH_SECONDS = 30
# Filter values are identifiers (tool names, catalog codes, variant names, client token names); the lengths are
# those of the Rollup columns. Anything else is refused before it reaches a query or the page.
FILTER_MAX_LENGTH = {"tool": 128, "code": 64, "client": 128, "variant": 40, "upstream": 64}
# Parentheses for vocabulary.INVALID_TOOL_NAME, under which calls of names that are not tool names are counted.
FILTER_VALUE = re.compile(r"[\w.:@/+()-]+")
# Distinct values offered in each filter's drop-down list; more would not be usable as a list anyway.
FILTER_CHOICES_LIMIT = 200
MISSING = "—"
# A rate over fewer calls (or episodes) than this is not shown as a percentage, only as its counts: one call in a
# minute bucket is 0 % or 100 %, and Wilson's 95 % interval around 5 of 10 still spans 24 % to 76 %. Ten is the
# usual floor of the normal approximation at an even split (n·p and n·(1-p) both at least 5).
MIN_RATE_COUNT = 10
TOO_FEW = f"too few to rate (under {MIN_RATE_COUNT})"
UNAVAILABLE_PROBLEM = "The metrics store is unavailable right now (Redis or the database); try again in a moment."


class BadDashboardQuery(ValueError):
    """The query string names an unknown window or a filter value that is not identifier-shaped."""


@dataclass(frozen=True, slots=True)
class DashboardQuery:
    window: str | None  # None: the query names none (``default_window`` decides)
    filters: dict[str, str | None]


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous visitors go to the admin login and come back; a signed-in user who is not staff gets 403.

    ``staff_member_required`` would send a non-staff user to the login page again, which reads as a bug to them.
    """

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path(), reverse("admin:login"))
        if not (request.user.is_active and request.user.is_staff):
            raise PermissionDenied("The outcomes dashboard is for staff.")
        return view(request, *args, **kwargs)

    return wrapper


def parse_query(params: Mapping[str, str]) -> DashboardQuery:
    """The window and filters of the query string; raises BadDashboardQuery on anything unexpected."""
    window = params.get("window") or None
    if window is not None and window not in WINDOWS:
        raise BadDashboardQuery(f"Unknown window. Choose one of {', '.join(WINDOWS)}.")
    filters: dict[str, str | None] = {}
    for name, max_length in FILTER_MAX_LENGTH.items():
        value = (params.get(name) or "").strip()
        if value and (len(value) > max_length or not FILTER_VALUE.fullmatch(value)):
            raise BadDashboardQuery(f"The {name} filter must be an identifier of at most {max_length} characters.")
        filters[name] = value or None
    return DashboardQuery(window=window, filters=filters)


@staff_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """The dashboard page for the window and filters in the query string; a malformed query gets a 400 page.

    A filter value that no recorded outcome has (a mistyped tool name) is not applied and not offered as a choice:
    the page says that nothing has that name.
    """
    try:
        query = parse_query(request.GET)
    except BadDashboardQuery as error:
        context = {**admin.site.each_context(request), "title": "Outcomes dashboard", "problem": str(error)}
        return render(request, "errcatalog/dashboard_bad_request.html", context, status=400)
    now = timezone.now()
    try:
        window = query.window or default_window(now)
        choices = filter_values(window, now=now, limit=FILTER_CHOICES_LIMIT)
        filters, unknown = known_filters(query.filters, choices)
        metrics = compute_metrics(window, now=now, **filters)
    except MetricsStoreUnavailable:
        return unavailable(request)
    # Clients are stored by token id ("token:1"); people know their tokens by name, everywhere on the page.
    client_names = client_display_names(
        {
            *choices["client"],
            *(row["key"] for row in metrics["breakdowns"].get("client", [])),
            *(episode["client"] for episode in metrics["recent_episodes"] if episode.get("client")),
        }
    )
    allocations = [allocation_view(item) for item in allocation_report()]
    share = upstream_failure_share(
        datetime.fromisoformat(metrics["window"]["start"]),
        datetime.fromisoformat(metrics["window"]["end"]),
        upstream=filters.get("upstream"),
    )
    query = DashboardQuery(window=window, filters=filters)
    context = {
        **admin.site.each_context(request),
        "title": "Outcomes dashboard",
        "allocations": allocations,
        "allocation_data": {item["key"]: item["chart"] for item in allocations},
        "windows": list(WINDOWS),
        "query": query,
        "filter_choices": {
            name: [(value, client_names.get(value, value) if name == "client" else value) for value in values]
            for name, values in choices.items()
        },
        "active_filters": [
            {"name": name, "value": value, "text": client_names.get(value, value) if name == "client" else value}
            for name, value in filters.items()
            if value
        ],
        "unknown_filters": unknown,
        "refresh_seconds": REFRESH_SECONDS,
        "refresh_query": urlencode({"window": window, **{name: value for name, value in filters.items() if value}}),
        "updated_text": now.strftime("%H:%M:%S"),
        "upstream_failures": upstream_failure_tile(share, inbox_url=_inbox_url(request)),
        **dashboard_context(metrics, client_names=client_names),
    }
    return render(request, "errcatalog/dashboard.html", context)


def unavailable(request: HttpRequest) -> HttpResponse:
    context = {**admin.site.each_context(request), "title": "Outcomes dashboard", "problem": UNAVAILABLE_PROBLEM}
    return render(request, "errcatalog/dashboard_bad_request.html", context, status=503)


def default_window(now: datetime) -> str:
    """``FIRST_HOUR_WINDOW`` while no recorded call or episode is an hour old, else ``DEFAULT_WINDOW``."""
    if recorded_before(now - timedelta(seconds=WINDOWS[FIRST_HOUR_WINDOW])):
        return DEFAULT_WINDOW
    return FIRST_HOUR_WINDOW


def known_filters(
    filters: Mapping[str, str | None], choices: Mapping[str, list[str]]
) -> tuple[dict[str, str | None], list[dict[str, str]]]:
    """The filters to apply, and those left out because no recorded outcome has that value.

    A value offered for the window is known; another one is looked up in all recorded outcomes (a tool called
    last week but not today is still a tool; the filter then shows zeros), and an upstream among the gateway's.
    Choices gain the known values; an unknown value never becomes a choice, and it is not applied (the page would
    be filtered by a value its drop-down cannot show).
    """
    applied: dict[str, str | None] = {}
    unknown: list[dict[str, str]] = []
    for name, value in filters.items():
        if value and value not in choices[name]:
            if ever_recorded(name, value) or (name == "upstream" and upstream_exists(value)):
                choices[name].insert(0, value)
            else:
                unknown.append({"name": name, "value": value})
                value = None
        applied[name] = value
    return applied, unknown


def _inbox_url(request: HttpRequest) -> str | None:
    if not request.user.has_perm("errcatalog.view_upstreamfailuregroup"):
        return None
    return reverse("admin:errcatalog_upstreamfailuregroup_changelist")


def upstream_failure_tile(share: FailureShare, *, inbox_url: str | None) -> dict[str, Any] | None:
    """The tile of upstream failures a specific rule classified, with the inbox's size; None without any. Pure."""
    if not share.total and not share.open_groups:
        return None
    groups = f"{format_count(share.open_groups)} group{'s' * (share.open_groups != 1)} in the inbox"
    figure = rate_figure(share.classified, share.total)
    return {
        "key": "upstream_classified_rate",
        "label": "Upstream failures classified",
        "text": figure["text"],
        "count_text": figure["count_text"],
        "too_few": figure["too_few"],
        "value": figure["rate"],
        "note": f"of upstream failures; {groups}",
        "inbox_url": inbox_url,
    }


# --- Turning metrics into display rows ---------------------------------------------------------------------


def dashboard_context(metrics: Mapping[str, Any], *, client_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Everything the template prints, derived from one ``compute_metrics`` result. Pure.

    ``client_names`` gives the readable name of client keys (``selectors.client_display_names``).
    """
    client_names = client_names or {}
    totals = metrics["totals"]
    targets = metrics["targets"]
    return {
        "metrics": metrics,
        "window_text": f"{_minute(metrics['window']['start'])} to {_minute(metrics['window']['end'])}",
        "bucket_text": _duration(metrics["window"]["bucket_seconds"]),
        "retry_target_percent": round(targets["retry_success_rate"] * 100, 1),
        "tiles": kpi_tiles(totals, targets),
        "episode_endings": episode_endings(totals),
        "chart_data": chart_data(metrics["series"], targets, metrics["window"]["bucket_seconds"]),
        "breakdowns": [
            breakdown_table(
                dimension,
                title,
                metrics["breakdowns"].get(dimension, []),
                names=client_names if dimension == "client" else None,
            )
            for dimension, title in (
                ("code", "Code"),
                ("tool", "Tool"),
                ("upstream", "Upstream"),
                ("client", "Client"),
                ("variant", "Variant"),
            )
        ],
        "comparisons": [comparison_view(item) for item in metrics["variant_comparison"]],
        "episodes": [episode_view(episode, client_names=client_names) for episode in metrics["recent_episodes"]],
        "min_rate_count": MIN_RATE_COUNT,
        "significance": SIGNIFICANCE,
        "recovery_rule": recovery_rule(
            window_seconds=settings.OUTCOMES["RETRY_WINDOW_SECONDS"],
            sessionless_window_seconds=settings.OUTCOMES["SESSIONLESS_RETRY_WINDOW_SECONDS"],
            max_attempts=settings.OUTCOMES["MAX_ATTEMPTS"],
        ),
    }


def recovery_rule(*, window_seconds: int, sessionless_window_seconds: int, max_attempts: int) -> str:
    """What the page counts as an episode and as recovered, in the words of ``outcomes.episodes``. Pure."""
    return (
        f"An episode is an error and the calls of the same tool by the same client that follow it in the same "
        f"session, each within {format_seconds(float(window_seconds))} of the one before; a call in another session "
        f"is never part of it. Recovered: one of the next {max_attempts} calls succeeded. Calls without a session "
        f"(2026-07-28 requests, reports without one) cannot be told apart from another run under the same token: "
        f"for them only a call within {format_seconds(float(sessionless_window_seconds))} counts."
    )


def rate_figure(numerator: int | None, denominator: int | None) -> dict[str, Any]:
    """A rate with its counts, for display. Pure.

    From ``MIN_RATE_COUNT`` up: "66.7 %" and "67 of 100". Below it the counts are the figure ("2 of 3") and the
    note says they are too few; ``rate`` is then None, so no chart point, target verdict or sort order rests on it.
    Nothing to divide by: "—" and "none".
    """
    numerator, denominator = numerator or 0, denominator or 0
    counts = f"{format_count(numerator)} of {format_count(denominator)}"
    if denominator <= 0:
        return {"text": MISSING, "count_text": "none", "rate": None, "too_few": False}
    if denominator < MIN_RATE_COUNT:
        return {"text": counts, "count_text": TOO_FEW, "rate": None, "too_few": True}
    return {"text": format_rate(numerator / denominator), "count_text": counts, "rate": numerator / denominator,
            "too_few": False}  # fmt: skip


# Each rate of a metrics ROW and the counters it divides: (numerator, denominator).
RATE_COUNTS: dict[str, tuple[str, str]] = {
    "error_rate": ("errors", "calls"),
    "interactive_error_rate": ("interactive_errors", "errors"),
    "retry_success_rate": ("recovered", "retried_episodes"),
    "first_retry_success_rate": ("first_retry_recovered", "retried_episodes"),
}


def row_rate(row: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``rate_figure`` of one of a metrics row's rates (``RATE_COUNTS``)."""
    numerator, denominator = RATE_COUNTS[key]
    return rate_figure(row.get(numerator), row.get(denominator))


def format_rate(rate: float | None) -> str:
    """A share as a percentage with one decimal ("66.7 %"); "—" when there was nothing to divide by."""
    return MISSING if rate is None else f"{rate * 100:.1f} %"


def format_count(count: int | None) -> str:
    return MISSING if count is None else f"{count:,}"


def format_ms(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms"


def format_seconds(value: float | None) -> str:
    """A duration read at a glance: "0.8 s", "42 s", "3.5 min", "1.2 h"; "—" when there is none."""
    if value is None:
        return MISSING
    if value < 10:
        return f"{value:.1f} s"
    if value < 60:
        return f"{value:.0f} s"
    if value < 3600:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def kpi_tiles(totals: Mapping[str, Any], targets: Mapping[str, float]) -> list[dict[str, Any]]:
    """The headline numbers; the two rates with a target say whether they meet it ("good"/"bad")."""

    def rate_tile(key: str, label: str, note: str) -> dict[str, Any]:
        figure = row_rate(totals, key)
        rate = figure["rate"]  # None below MIN_RATE_COUNT: too few to hold against a target
        target = targets.get(key)
        tile = {
            "key": key,
            "label": label,
            "text": figure["text"],
            "count_text": figure["count_text"],
            "too_few": figure["too_few"],
            "value": rate,
            "note": note,
        }
        if target is not None:
            tile["target"] = target
            tile["target_text"] = f"target > {target * 100:.0f} %"
            tile["target_percent"] = round(target * 100, 1)
            tile["status"] = "none" if rate is None else ("good" if rate > target else "bad")
            tile["bar_percent"] = 0 if rate is None else round(rate * 100, 1)
        return tile

    return [
        {
            "key": "calls",
            "label": "Calls",
            "text": format_count(totals["calls"]),
            "value": totals["calls"],
            "note": f"{format_count(totals['errors'])} errors",
        },
        rate_tile("error_rate", "Error rate", "errors / calls"),
        rate_tile("retry_success_rate", "Retry success rate", "recovered / retried episodes that ended"),
        rate_tile("first_retry_success_rate", "First-retry success rate", "recovered at the first retry"),
        rate_tile("interactive_error_rate", "Interactive-error rate", "errors asked as a question or elicitation"),
        {
            "key": "latency",
            "label": "Latency p50 / p95",
            "text": f"{format_ms(totals['latency_p50_ms'])} / {format_ms(totals['latency_p95_ms'])}",
            "parts": [format_ms(totals["latency_p50_ms"]), format_ms(totals["latency_p95_ms"])],
            "value": totals["latency_p50_ms"],
            "note": "per call",
        },
        {
            "key": "resolution",
            "label": "User resolution time p50 / p90",
            "text": f"{format_seconds(totals['resolution_p50_seconds'])} / "
            f"{format_seconds(totals['resolution_p90_seconds'])}",
            "parts": [
                format_seconds(totals["resolution_p50_seconds"]),
                format_seconds(totals["resolution_p90_seconds"]),
            ],
            "value": totals["resolution_p50_seconds"],
            "note": f"first failed call to recovering call, {format_count(totals['recovered'])} recovered episodes",
        },
    ]


def episode_endings(totals: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Episodes by ending; those neither recovered, exhausted nor abandoned are still open."""
    ended = totals["recovered"] + totals["exhausted"] + totals["abandoned"]
    counts = [
        ("recovered", totals["recovered"]),
        ("exhausted", totals["exhausted"]),
        ("abandoned", totals["abandoned"]),
        ("open", max(totals["episodes"] - ended, 0)),
    ]
    return [{"ending": ending, "count": count, "text": format_count(count)} for ending, count in counts]


def chart_data(series: list[Mapping[str, Any]], targets: Mapping[str, float], step: int) -> dict[str, Any]:
    """Per-bucket values for the two charts; rates in percent, None (a gap) where a bucket had fewer than
    ``MIN_RATE_COUNT`` calls or episodes to divide by. ``counts`` gives each rate's [numerator, denominator] per
    bucket, for the tooltips: a gap still says what happened in it."""

    def percent(rate: float | None) -> float | None:
        return None if rate is None else round(rate * 100, 2)

    rate_keys = ("error_rate", "retry_success_rate", "first_retry_success_rate", "interactive_error_rate")
    return {
        "min_count": MIN_RATE_COUNT,
        "bucket_seconds": step,
        "labels": [bucket_label(row["bucket"], step) for row in series],
        "buckets": [row["bucket"] for row in series],
        "calls": [row["calls"] for row in series],
        "errors": [row["errors"] for row in series],
        "rates": {key: [percent(row_rate(row, key)["rate"]) for row in series] for key in rate_keys},
        "counts": {
            key: [[row.get(RATE_COUNTS[key][0]) or 0, row.get(RATE_COUNTS[key][1]) or 0] for row in series]
            for key in rate_keys
        },
        "targets": {key: round(value * 100, 2) for key, value in targets.items()},
    }


def bucket_label(iso: str, step: int) -> str:
    """A short UTC label: the hour within a day, the date for daily buckets, both in between."""
    moment = datetime.fromisoformat(iso)
    if step >= 86_400:
        return moment.strftime("%b %d")
    return moment.strftime("%H:%M") if step < 3600 else moment.strftime("%b %d %H:%M")


# Columns of every breakdown table: (row key, heading, formatter). The key column comes first.
METRIC_COLUMNS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("calls", "Calls", format_count),
    ("errors", "Errors", format_count),
    ("error_rate", "Error rate", format_rate),
    ("interactive_error_rate", "Interactive", format_rate),
    ("episodes", "Episodes", format_count),
    ("recovered", "Recovered", format_count),
    ("exhausted", "Exhausted", format_count),
    ("abandoned", "Abandoned", format_count),
    ("retry_success_rate", "Retry success", format_rate),
    ("first_retry_success_rate", "First-retry success", format_rate),
    ("latency_p50_ms", "p50", format_ms),
    ("latency_p95_ms", "p95", format_ms),
    ("resolution_p50_seconds", "Resolution p50", format_seconds),
    ("resolution_p90_seconds", "Resolution p90", format_seconds),
)


def breakdown_table(
    dimension: str, title: str, rows: list[Mapping[str, Any]], *, names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """One sortable table: each cell has its text and a numeric sort key ("" when the value is missing).

    ``names`` replaces a row key's text by a readable name (client token names); the row keeps its key.
    """
    names = names or {}
    columns = [{"key": "key", "label": title, "numeric": False}]
    columns += [{"key": key, "label": label, "numeric": True} for key, label, _ in METRIC_COLUMNS]
    body = []
    for row in rows:
        key = names.get(row["key"]) or row["key"] or ("(none)" if dimension != "code" else "(success)")
        cells = [{"text": key, "sort": key}]
        cells += [_metric_cell(row, name, fmt) for name, _, fmt in METRIC_COLUMNS]
        body.append({"key": row["key"], "cells": cells})
    return {"dimension": dimension, "title": f"By {title.lower()}", "columns": columns, "rows": body}


def _metric_cell(row: Mapping[str, Any], name: str, fmt: Callable[[Any], str]) -> dict[str, Any]:
    """A breakdown cell; a rate's also carries its counts, and sorts as missing when they are too few."""
    if name not in RATE_COUNTS:
        return {"text": fmt(row.get(name)), "sort": "" if row.get(name) is None else row[name]}
    figure = row_rate(row, name)
    return {
        "text": figure["text"],
        # Short under the counts: fourteen columns share 1,366 px; the page's note says what "too few" means.
        "count_text": "too few" if figure["too_few"] else figure["count_text"],
        "too_few": figure["too_few"],
        "sort": "" if figure["rate"] is None else figure["rate"],
    }


def comparison_view(item: Mapping[str, Any]) -> dict[str, Any]:
    """A code's variants with their rate and 95 % interval, as percentages ready for an SVG bar.

    The "best" badge follows the comparison's test: only a variant that recovers more often beyond noise
    (``significant``) is marked; otherwise no variant is, and the verdict says why.
    """
    variants = []
    for variant in item["variants"]:
        low, high = variant["ci_low"] * 100, variant["ci_high"] * 100
        rate = variant["retry_success_rate"]
        figure = rate_figure(variant["recovered"], variant["episodes"])
        variants.append(
            {
                **variant,
                "is_best": bool(item["significant"]) and variant["variant"] == item["best"],
                "rate_text": figure["text"],
                "too_few": figure["too_few"],
                "interval_text": f"{low:.1f} to {high:.1f} %",
                "ci_x": round(low, 2),
                "ci_width": round(max(high - low, 0.5), 2),
                "rate_x": None if rate is None else round(rate * 100, 2),
            }
        )
    return {**item, "variants": variants}


def allocation_view(item: Mapping[str, Any]) -> dict[str, Any]:
    """An adaptive code's variants (share now, rate, interval as for the comparison) and its shares-over-time chart."""
    key = f"{item['code']}:{item['locale']}"
    names = [variant["variant"] for variant in item["variants"]]
    chart = {
        "labels": [_minute(point["t"]) for point in item["history"]],
        "series": {name: [point["shares"].get(name) for point in item["history"]] for name in names},
    }
    gained = item["gained"]
    return {
        **item,
        "key": key,
        "chart": chart,
        "gained_text": MISSING if gained is None else f"{gained:+.1f}",
        "variants": [
            {
                **variant,
                "share_text": format_rate(variant["share"]),
                "rate_text": rate_figure(variant["recovered"], variant["episodes"])["text"],
                "interval_text": MISSING
                if not variant["episodes"]
                else f"{variant['ci_low'] * 100:.1f} to {variant['ci_high'] * 100:.1f} %",
            }
            for variant in item["variants"]
        ],
    }


def episode_view(episode: Mapping[str, Any], *, client_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An episode row; its Sentry link only when the configured URL is plain http(s)."""
    client = episode.get("client") or ""
    return {
        **episode,
        "client_text": (client_names or {}).get(client, client),
        "started_text": _short_time(episode["started_at"]),
        "ended_text": _short_time(episode["ended_at"]) if episode["ended_at"] else MISSING,
        "resolution_text": format_seconds(episode.get("resolution_seconds")),
        "sentry_href": safe_link(episode.get("sentry_url")),
    }


def safe_link(url: str | None) -> str | None:
    """``url`` when it is an absolute http or https URL with a host, else None (no javascript:, data:, …)."""
    if not url:
        return None
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else None


def _short_time(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S")


def _minute(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M")


def _duration(seconds: int) -> str:
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count}-{unit}" if count != 1 else unit
    return f"{seconds}-second"

"""The numbers the dashboard and ``GET /api/v1/metrics/`` show, read from rollups (stub: a helper implements it).

Interface (fixed): ``compute_metrics(window="24h", *, tool=None, code=None, client=None, variant=None, now=None)``
returns plain JSON-ready data:

    {
      "window": {"name": "24h", "start": ISO, "end": ISO, "bucket_seconds": 3600},
      "filters": {"tool": None, "code": None, "client": None, "variant": None},
      "targets": {"retry_success_rate": 0.6, "interactive_error_rate": 0.8},
      "totals": ROW,
      "series": [{"bucket": ISO, **ROW}, ...],              # one per bucket in the window, oldest first
      "breakdowns": {"code": [{"key": ..., **ROW}], "tool": [...], "client": [...],
                     "variant": [{"key": "CODE/variant", "code": ..., "variant": ..., **ROW}]},
      "variant_comparison": [
        {"code": ..., "variants": [{"variant": ..., "episodes": n, "recovered": n, "retry_success_rate": x,
                                    "ci_low": x, "ci_high": x}],
         "best": name | None, "p_value": x | None, "significant": bool, "verdict": "sentence"}
      ],
      "recent_episodes": [{"id", "tool", "code", "variant", "client", "started_at", "ended_at", "ending",
                           "retries", "recovered_at_attempt", "sentry_event_id", "sentry_url"}],
    }

ROW = {"calls", "errors", "error_rate", "interactive_errors", "interactive_error_rate", "retries", "episodes",
"recovered", "exhausted", "abandoned", "retry_success_rate", "first_retry_success_rate", "latency_p50_ms",
"latency_p95_ms"}; a rate is None when its denominator is 0.
"""

from __future__ import annotations

WINDOWS = {"1h": 3600, "24h": 24 * 3600, "7d": 7 * 24 * 3600, "30d": 30 * 24 * 3600}

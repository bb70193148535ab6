"""Rollups (stub: a helper implements it).

Interface (fixed):
- ``compute_due() -> int``: recompute every bucket whose events or episodes changed since the last run.
- ``recompute_bucket(start: datetime) -> int``: recompute one bucket whole (idempotent); returns rows written.
- ``LATENCY_BOUNDS_MS``: upper bounds of the latency histogram bins stored in ``Rollup.latency_histogram``.
"""

from __future__ import annotations

from datetime import datetime

LATENCY_BOUNDS_MS: tuple[float, ...] = ()


def compute_due() -> int:
    return 0


def recompute_bucket(start: datetime) -> int:
    return 0

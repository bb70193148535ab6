"""Retry episodes (stub: a helper implements it).

Interface (fixed):
- ``close_abandoned(now: datetime | None = None) -> int``: end open episodes whose retry window passed.
"""

from __future__ import annotations

from datetime import datetime


def close_abandoned(now: datetime | None = None) -> int:
    return 0

"""How admin's list pages show values, shared by every domain's admin."""

from __future__ import annotations

from datetime import datetime

from django.utils.timezone import localtime


def fixed_width_time(value: datetime | None) -> str:
    """A fixed-width local time for a list column ("-" for none, as admin shows an empty value): the locale's
    "Sept. 30, 2026, 12:59 p.m." grows and shrinks with the date and the hour, and a list page that fits a laptop
    screen at nine in the morning in November may not at ten, or in September."""
    return localtime(value).strftime("%Y-%m-%d %H:%M") if value is not None else "-"

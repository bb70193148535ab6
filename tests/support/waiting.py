"""Waiting in tests: poll until a condition holds, and fail the test when it never does (a wait, not a timing check)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], *, seconds: float = 30.0, what: str = "condition") -> None:
    """Poll until ``condition()`` is true; fail the test when it never becomes so (a wait, not a timing check)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)

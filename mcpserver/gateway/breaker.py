"""An upstream's circuit breaker: calls refused at once while its transport keeps failing.

``UpstreamConnection`` (``connection``) asks it before every call and tells it how each ended; admin shows its state
(``UpstreamConnection.health``).
"""

from __future__ import annotations

import time


class CircuitBreaker:
    """Closed until ``failures`` transport failures in a row; then open for ``open_seconds`` (every call refused
    at once); then half-open: one call goes through as a probe, and its outcome closes or reopens the circuit."""

    def __init__(self, failures: int, open_seconds: float):
        self.threshold = failures
        self.open_seconds = open_seconds
        self.failures = 0
        self.opened_at: float | None = None
        self.probing = False

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half-open" if time.monotonic() - self.opened_at >= self.open_seconds else "open"

    def refusal(self) -> float | None:
        """Seconds until a call may go through, or None when this call may (and, half-open, is the probe)."""
        if self.opened_at is None:
            return None
        remaining = self.opened_at + self.open_seconds - time.monotonic()
        if remaining > 0:
            return remaining
        if self.probing:
            return self.open_seconds
        self.probing = True
        return None

    def succeeded(self) -> None:
        self.failures = 0
        self.opened_at = None
        self.probing = False

    def failed(self) -> None:
        self.failures += 1
        if self.probing or self.failures >= self.threshold:
            self.opened_at = time.monotonic()
        self.probing = False

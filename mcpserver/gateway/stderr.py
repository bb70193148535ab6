"""A stdio child's stderr: its own text, logged line by line as upstream text is, and its last lines kept.

``UpstreamConnection`` (``connection``) hands ``ChildStderr.writer`` to the child; a failed check shows the operator
``ChildStderr.tail`` (``probe``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque

from errcatalog.safety import redacted_for_people

logger = logging.getLogger("mcpserver.gateway")

# A stdio child's stderr lines logged per minute, at most.
STDERR_LINES_PER_MINUTE = 120
# The last lines of a stdio child's stderr a failed check shows the operator (``ProbeResult.stderr_tail``), each cut
# to as many characters: enough for a stack trace's end or a "command not found", not a flood.
STDERR_TAIL_LINES = 20
STDERR_LINE_MAX_CHARS = 500


class ChildStderr:
    """A stdio child's stderr: a pipe whose lines a thread logs as upstream text (cut, credentials redacted), at
    most ``STDERR_LINES_PER_MINUTE`` a minute, so a chatty child cannot flood the log. The last
    ``STDERR_TAIL_LINES`` lines, logged or not, are kept for a failed check (``tail``)."""

    # How long ``tail`` waits for the reader to reach the end of the pipe (the child is already stopped).
    TAIL_WAIT_SECONDS = 2.0

    def __init__(self, upstream: str, secrets: tuple[str, ...]) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        self._upstream = upstream
        self._secrets = secrets
        self._last: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._thread = threading.Thread(target=self._log_lines, name=f"upstream-{upstream}-stderr", daemon=True)
        self._thread.start()

    def tail(self) -> tuple[str, ...]:
        """The last lines the child wrote, once its stderr ended (or after ``TAIL_WAIT_SECONDS``)."""
        self.close_writer()
        self._thread.join(self.TAIL_WAIT_SECONDS)
        return tuple(self._last)

    def close_writer(self) -> None:
        if not self.writer.closed:
            self.writer.close()

    def _log_lines(self) -> None:
        window, logged, dropped = time.monotonic(), 0, 0
        with self._reader:
            for raw in self._reader:
                line = redacted_for_people(
                    raw.decode("utf-8", "replace").rstrip(), known=self._secrets, limit=STDERR_LINE_MAX_CHARS
                )
                self._last.append(line)
                if time.monotonic() - window >= 60:
                    if dropped:
                        logger.info("Upstream %s stderr: %d more lines not logged", self._upstream, dropped)
                    window, logged, dropped = time.monotonic(), 0, 0
                if logged >= STDERR_LINES_PER_MINUTE:
                    dropped += 1
                    continue
                logged += 1
                logger.info("Upstream %s stderr: %s", self._upstream, line)

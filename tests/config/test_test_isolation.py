"""The tests reach Redis only through the ``redis_url`` fixture (tests/conftest.py): no test names a Redis database
of the machine. Dead Redis URLs on a closed free port (``127.0.0.1:{port}``) are fine; a literal port or a
database number of a running server is not."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# A Redis URL with a literal port (redis://127.0.0.1:6379/0) or the machine's Redis by address (localhost:6379).
LITERAL_REDIS = re.compile(r"redis://[^\s\"'{]*:\d+|(?:127\.0\.0\.1|localhost|\[::1\]):6379")


def test_no_test_names_a_redis_database_of_the_machine():
    offenders = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if LITERAL_REDIS.search(line)
    ]
    assert offenders == []

"""How long ``./dev up`` takes to serve, the first time and again on the same data, and ``./dev manage check``.

Run: ``.venv/bin/python bench/dev_up_bench.py [--runs N]``. Each ``./dev up`` runs as a new user runs it
(tests/support/devup.py: a throwaway data folder, none of the caller's database or Redis variables) and is timed from
its start to its first HTTP answer, then stopped as Ctrl+C would; the second start reuses the first one's data, which
is what a developer meets every day. ``./dev manage check`` is timed with the dependencies already in place.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import devup


def time_dev_up(folder: Path) -> float:
    started = time.monotonic()
    served = devup.start(folder)
    seconds = time.monotonic() - started
    devup.stop(served)
    return seconds


def time_manage_check() -> float:
    started = time.monotonic()
    subprocess.run(  # noqa: S603 (the repository's own ./dev)
        [str(devup.REPO_ROOT / "dev"), "manage", "check"], check=True, capture_output=True, cwd=devup.REPO_ROOT
    )
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="Repeats of the second start and of manage check.")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        first = time_dev_up(Path(folder))
        print(f"first ./dev up serves after      {first:6.1f} s")
        again = [time_dev_up(Path(folder)) for _ in range(options.runs)]
        print(f"second ./dev up serves after     {statistics.median(again):6.1f} s (median of {options.runs})")
    checks = [time_manage_check() for _ in range(options.runs)]
    print(f"./dev manage check takes         {statistics.median(checks):6.1f} s (median of {options.runs})")


if __name__ == "__main__":
    main()

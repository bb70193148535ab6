"""``./dev up``'s supervisor (config/supervisor.py): a Celery worker killed under load is started again, stderr says
so, and every call made is counted in the end; the pause before a restart grows with the exits in a row.

The load test runs the real ``./dev up`` (tests/support/devup.py) and calls its MCP endpoint through the SDK's client.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

from config.supervisor import describe_exit, restart_delay
from tests.support import devup


def test_a_worker_killed_under_load_is_restarted_said_so_and_every_call_counted(tmp_path):
    served = devup.start_set_up(tmp_path, env={"ERRCATALOG_MCP_RATE_LIMIT": "0"})
    try:
        before = devup.wait_for_worker_and_beat(served)
        answered = asyncio.run(
            devup.call_under_load(
                served,
                calls=600,
                concurrency=4,
                disturb_at=200,
                disturb=lambda: os.kill(before["worker"], signal.SIGKILL),
            )
        )
        assert answered == 600

        worker_log = served.data_dir / "log" / "worker.log"
        said = f"errcatalog: the Celery worker exited (killed by SIGKILL); restarting it in 1 s (see {worker_log})\n"
        deadline = time.monotonic() + 120
        while worker_log.read_text(errors="replace").count(" ready.") < 2:
            assert time.monotonic() < deadline, f"the worker was not started again:\n{served.stderr()}"
            time.sleep(0.2)
        assert said in served.stderr()
        after = devup.stack(served)
        assert after["worker"] != before["worker"]
        assert (after["web"], after["beat"]) == (before["web"], before["beat"])
        # Every call made is counted, none twice: the killed worker's batch waited in the spool for the new one.
        assert devup.wait_for_outcomes(served, "explain_error", answered) == answered
    finally:
        devup.stop(served)


def test_the_pause_before_a_restart_doubles_with_each_exit_in_a_row_up_to_a_minute():
    assert [restart_delay(exits) for exits in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert describe_exit(1) == "status 1"
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL"

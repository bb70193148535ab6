"""The worker threads of sync tools (``mcpserver.tool_threads``): results, exceptions, context, cancellation, fork."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading

import pytest

from mcpserver.tool_threads import run_in_thread

request_name: contextvars.ContextVar[str] = contextvars.ContextVar("request_name", default="")


class ToolFailed(Exception):
    pass


def test_the_result_comes_back_from_another_thread():
    def tool(a: int, b: int) -> tuple[int, int]:
        return a + b, threading.get_ident()

    total, thread = asyncio.run(run_in_thread(tool, 2, 3))
    assert total == 5
    assert thread != threading.get_ident()


def test_what_the_tool_raises_is_raised_to_the_caller():
    def tool() -> None:
        raise ToolFailed("the service answered 502")

    with pytest.raises(ToolFailed, match="502"):
        asyncio.run(run_in_thread(tool))


def test_the_tool_sees_the_callers_context_and_its_own_changes_stay_in_the_thread():
    def tool() -> str:
        seen = request_name.get()
        request_name.set("changed in the tool")
        return seen

    async def call() -> tuple[str, str]:
        request_name.set("call 7")
        seen = await run_in_thread(tool)
        return seen, request_name.get()

    assert asyncio.run(call()) == ("call 7", "call 7")


def test_calls_run_at_once_each_in_a_thread():
    started = threading.Barrier(3, timeout=10)

    def tool(number: int) -> int:
        started.wait()  # returns only when all three run at the same time
        return number

    async def calls() -> list[int]:
        return await asyncio.gather(*(run_in_thread(tool, n) for n in range(3)))

    assert asyncio.run(calls()) == [0, 1, 2]


def _tool_threads() -> int:
    return sum(thread.name.startswith("errcatalog-tool-") for thread in threading.enumerate())


def test_calls_one_after_another_reuse_the_idle_threads():
    async def one_after_another() -> None:
        for number in range(50):
            assert await run_in_thread(abs, -number) == number

    asyncio.run(run_in_thread(abs, 0))
    before = _tool_threads()
    asyncio.run(one_after_another())
    assert before >= 1
    assert _tool_threads() == before


def test_a_cancelled_caller_stops_waiting_and_the_tool_ends_in_its_thread_unheard():
    release, finished = threading.Event(), threading.Event()

    def tool() -> str:
        release.wait(10)
        finished.set()
        return "too late"

    async def call_then_cancel() -> bool:
        task = asyncio.create_task(run_in_thread(tool))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        cancelled_before_the_tool_ended = not finished.is_set()
        release.set()
        # The tool's result reaches a cancelled waiter: dropped, no error on the loop.
        await asyncio.to_thread(finished.wait, 10)
        await asyncio.sleep(0.05)
        return cancelled_before_the_tool_ended

    errors: list[dict] = []

    async def main() -> bool:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: errors.append(context))
        return await call_then_cancel()

    assert asyncio.run(main()) is True
    assert finished.is_set()
    assert errors == []


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_runs_tools_in_threads_of_its_own():
    # The parent's pool has threads by now; the child has none of them.
    assert asyncio.run(run_in_thread(lambda: "parent")) == "parent"
    pid = os.fork()
    if pid == 0:  # the child reports through its exit status
        try:
            ok = asyncio.run(asyncio.wait_for(run_in_thread(lambda: "child"), 10)) == "child"
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0

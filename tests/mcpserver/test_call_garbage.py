"""A served call's own objects are freed by reference counting as soon as it is answered.

A reference cycle among them (a call and its tool context, a long call's watch and the request's task) would leave
each request's objects, the SDK's request context and the Starlette request with them, to the cyclic garbage
collector, whose passes then cost a busy endpoint a measurable share of its time per call (``bench/gateway_bench.py``).
"""

from __future__ import annotations

import gc

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

# Our per-call objects: the pipeline's call, the tool's context, a 2026-07-28 long call's watch.
PER_CALL_TYPES = {"ToolCall", "_ToolContext", "WatchedCall"}


def test_a_served_call_leaves_no_reference_cycle_of_ours(mcp):
    async def scenario(client):
        for _ in range(3):
            assert not (await client.call_tool("whoami", {})).is_error  # a tool with a context: a long call
            assert not (await client.call_tool("explain_error", {"code": "rate_limit"})).is_error

    gc.collect()
    gc.disable()  # nothing is collected meanwhile: what the calls leave to the collector is found below
    try:
        mcp.run(scenario)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = {type(found).__name__ for found in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not left & PER_CALL_TYPES, sorted(left & PER_CALL_TYPES)

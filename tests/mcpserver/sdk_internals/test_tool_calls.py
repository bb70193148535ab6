"""The reach of ``mcpserver.sdk_internals.tool_calls``: what ``ModernToolCalls`` takes from a server middleware's
context and from ``mcp_types`` to check a 2026-07-28 call as the SDK's runner would."""

from __future__ import annotations

import dataclasses
import inspect

from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp_types.methods import validate_client_request

from mcpserver.sdk_internals.tool_calls import ModernToolCalls
from mcpserver.server import SERVER_INFO, SERVER_NAME, SERVER_VERSION
from tests.mcpserver.sdk_internals.support import revisit, sdk_source


def test_a_middlewares_context_has_what_the_middleware_reads():
    fields = {f.name for f in dataclasses.fields(ServerRequestContext)} | set(dir(ServerRequestContext))
    missing = {"method", "params", "protocol_version", "session", "request"} - fields
    assert not missing, revisit("tool_calls", f"ServerRequestContext lacks {sorted(missing)}")


def test_the_runner_checks_a_request_with_the_function_the_middleware_calls():
    parameters = list(inspect.signature(validate_client_request).parameters)
    assert parameters[:3] == ["method", "version", "params"], revisit(
        "tool_calls", f"validate_client_request takes {parameters}"
    )
    assert "validate_client_request(" in sdk_source("server/runner.py"), revisit(
        "tool_calls", "the runner no longer checks a request with validate_client_request"
    )


def test_a_middleware_may_answer_without_call_next_and_owns_its_result():
    # The SDK's documented rule the middleware relies on (``ServerRunner._serialize``'s docstring).
    words = " ".join(sdk_source("server/runner.py").split())
    assert "a middleware that short-circuits without `call_next` owns its result" in words, revisit(
        "tool_calls", "the runner no longer documents that a short-circuiting middleware owns its result"
    )


def test_the_stamped_identity_is_the_servers_own():
    stamp = Server(SERVER_NAME, version=SERVER_VERSION).server_info_stamp
    assert stamp == SERVER_INFO, revisit("tool_calls", f"the SDK stamps {stamp}, the middleware {SERVER_INFO}")


def test_the_middleware_takes_its_answer_and_identity():
    assert list(inspect.signature(ModernToolCalls).parameters) == ["answer", "server_info"]

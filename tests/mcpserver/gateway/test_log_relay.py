"""The log relay's bounds on what an upstream sends: levels, loggers and data of any shape and size."""

from __future__ import annotations

import asyncio
import json

import mcp_types as types

from mcpserver.gateway.log_relay import (
    LOG_MAX_ITEMS,
    LOG_MAX_TOTAL_CHARS,
    LOG_STRING_MAX_CHARS,
    RequestLog,
    bounded,
    relay_log,
)

SECRET = "ghp_upstreamLeakedToken1234567890abcdef"


class _Sender:
    def __init__(self) -> None:
        self.sent: list[tuple[str, object, str | None, bool]] = []

    async def log(self, level: str, data: object, *, logger: str | None = None, related: bool = True) -> None:
        self.sent.append((level, data, logger, related))


def _relay(params: dict, level: str = "info") -> list:
    sender = _Sender()
    message = types.LoggingMessageNotificationParams.model_validate(params)
    asyncio.run(relay_log(message, RequestLog(sender, level), upstream="up", secrets=("sealed-value",)))
    return sender.sent


def test_strings_are_cut_and_credentials_redacted():
    [(level, data, logger, _)] = _relay({"level": "error", "data": f"sealed-value {SECRET} " + "A" * 100_000})
    assert level == "error" and logger == "up"
    assert "sealed-value" not in data and SECRET not in data
    assert len(data) <= LOG_STRING_MAX_CHARS


def test_below_the_level_nothing_is_relayed():
    assert _relay({"level": "debug", "data": "x"}, level="info") == []
    assert _relay({"level": "warning", "data": "x"}, level="error") == []
    assert len(_relay({"level": "emergency", "data": "x"}, level="error")) == 1


def test_a_logger_name_is_the_upstreams_then_its_own_redacted():
    [(_, _, logger, _)] = _relay({"level": "info", "data": "x", "logger": f"db {SECRET}\x1b[31m" + "L" * 500})
    assert logger.startswith("up/db ") and SECRET not in logger and "\x1b" not in logger and len(logger) < 120


def test_structures_are_bounded_in_depth_width_and_size_without_recursion():
    deep: object = "bottom"
    for _ in range(100_000):  # far deeper than Python's recursion limit
        deep = {"k": deep}
    assert json.dumps(bounded(deep, ())).count("{") <= 5
    wide = bounded({f"key {i} {SECRET}": "v" * 5000 for i in range(1000)}, ())
    assert len(wide) == LOG_MAX_ITEMS + 1  # and a note of how many more
    assert SECRET not in json.dumps(wide)
    assert sum(len(k) + len(v) for k, v in wide.items() if isinstance(v, str)) <= LOG_MAX_TOTAL_CHARS + 200
    assert bounded([1, 2.5, True, None, "x"], ()) == [1, 2.5, True, None, "x"]

"""Cost of the JSON-RPC error screen (mcpserver.jsonrpc_errors.screened_send) per response, in process.

    .venv/bin/python bench/jsonrpc_screen_bench.py [--n 200000]

Sends the same ASGI messages through a bare ``send`` and through ``screened_send(send)``: a 2026-07-28 JSON
success answer (one start, one body), a 2025-11-25 SSE success event, and an error answer that is rewritten. Reports
microseconds per response for each, and the difference (what the screen adds to a successful call).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpserver.jsonrpc_errors import screened_send

RESULT = {
    "jsonrpc": "2.0",
    "id": 7,
    "result": {
        "content": [{"type": "text", "text": "Forecast for Oslo: cloudy, 12 C, wind 4 m/s. " * 4}],
        "structuredContent": {"location": "Oslo", "weather": {"temperature_c": 12, "conditions": "cloudy"}},
        "isError": False,
    },
}
ERROR = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found", "data": "x" * 40}}


def messages(payload: dict, sse: bool) -> list[dict]:
    body = json.dumps(payload, separators=(",", ":")).encode()
    if sse:
        start = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
        return [
            start,
            {"type": "http.response.body", "body": b"event: message\r\ndata: " + body + b"\r\n\r\n", "more_body": True},
            {"type": "http.response.body", "body": b"", "more_body": False},
        ]
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return [
        {"type": "http.response.start", "status": 200, "headers": headers},
        {"type": "http.response.body", "body": body, "more_body": False},
    ]


async def per_response(msgs: list[dict], n: int, screened: bool) -> float:
    async def send(message: dict) -> None:
        return None

    started = time.perf_counter()
    for _ in range(n):
        target = screened_send(send) if screened else send
        for message in msgs:
            await target(message)
    return (time.perf_counter() - started) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200_000)
    n = parser.parse_args().n
    for name, msgs in (
        ("JSON success", messages(RESULT, sse=False)),
        ("SSE success", messages(RESULT, sse=True)),
        ("JSON error, rewritten", messages(ERROR, sse=False)),
    ):
        bare = min(asyncio.run(per_response(msgs, n, False)) for _ in range(3))
        screened = min(asyncio.run(per_response(msgs, n, True)) for _ in range(3))
        print(f"{name:24} bare {bare:6.2f} us  screened {screened:6.2f} us  added {screened - bare:5.2f} us")


if __name__ == "__main__":
    main()

"""Upstream failure texts of 2,000 characters, the most of one that rules read and the screen keeps
(``errcatalog.render.patterns.TEXT_MAX_CHARS``), as real servers word them, for the benchmarks of classification
and of the screen. Each builder takes a variant number: texts differ in their details (paths, numbers), as failures
do, so that no cache answers for them."""

from __future__ import annotations

from errcatalog.render.patterns import TEXT_MAX_CHARS


def padded(head: str, filler: str, tail: str = "") -> str:
    """``head``, ``filler`` repeated and ``tail``, twice TEXT_MAX_CHARS long: redacted as the gateway redacts an
    upstream's text (``redacted_for_people``), it is cut to TEXT_MAX_CHARS."""
    body = head
    while len(body) < 2 * TEXT_MAX_CHARS - len(tail):
        body += filler
    return body[: 2 * TEXT_MAX_CHARS - len(tail)] + tail


def unauthorized(i: int) -> str:
    """An HTTP 401 with URLs and a JSON body."""
    return padded(
        f"401 Unauthorized: the token for workspace ws-{i:04d} was rejected by https://api.example.com/v2/items.\n"
        f'Response body: {{"error": "invalid_token", "request_id": "req-{i * 7919:08x}"}}\n',
        f"  retry {i}: GET https://api.example.com/v2/items?page={i}&per_page=100 -> 401\n",
    )


def enoent(i: int) -> str:
    """Node's ENOENT with its stack."""
    return padded(
        f"ENOENT: no such file or directory, open '/workspace/projects/report-{i}/data/2026-q{i % 4 + 1}.csv'\n",
        f"    at async open (node:internal/fs/promises:639:25)\n"
        f"    at async Object.readFile (node:internal/fs/promises:1242:14)\n"
        f"    at async readFileContent (file:///app/dist/lib.js:{100 + i}:20)\n",
    )


def percentile(values: list[int], fraction: float) -> float:
    """The value at ``fraction`` of the sorted values (the nearest rank at or below it)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

"""Render cost per face, from a loaded snapshot, against json.dumps of the same envelope.

    ./dev bench            # or: .venv/bin/python bench/render_bench.py [--repeat 7] [--number 2000]

Each face is timed end to end (render the failure with the catalog, then build the face), as the MCP endpoint
does per failed call: once for a failure this snapshot has rendered before (the render cache hit that most calls
get) and once for a first render (the cache emptied before each call). The figure is the median over
``--repeat`` runs of ``--number`` calls each, in µs per call. The reference is ``json.dumps`` of that failure's
``toolError:v1`` envelope, timed in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml

from errcatalog.render import (
    Failure,
    ParameterFault,
    agent_error,
    anatomy,
    envelope,
    error_response,
    provider_result,
    render,
    tool_result,
    user_markdown,
)
from errcatalog.render.entries import CatalogSnapshot

DEFAULT_CATALOG = Path(__file__).resolve().parent.parent / "errcatalog" / "catalog" / "data" / "default_catalog.yaml"

FAILURES = {
    "missing parameter": Failure("MISSING_PARAMETER", tool_name="send_email", parameters=(ParameterFault("to"),)),
    "server error": Failure("SERVER_ERROR", tool_name="get_weather", status_code=502, event_id="abc123def456"),
}

FACES = {
    "tool_result markdown": lambda r: tool_result(r, "markdown"),
    "tool_result both": lambda r: tool_result(r, "both"),
    "jsonrpc error": lambda r: error_response(r, 1),
    "user markdown": user_markdown,
    "agent wrapper": agent_error,
    "anatomy": anatomy,
    "openai": lambda r: provider_result(r, "openai", "call_1"),
    "anthropic": lambda r: provider_result(r, "anthropic", "call_1"),
    "gemini": lambda r: provider_result(r, "gemini"),
}


def median_us(func, *, number: int, repeat: int) -> float:
    runs = timeit.repeat(func, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls per run")
    parser.add_argument("--repeat", type=int, default=7, help="runs; the median is reported")
    parser.add_argument("--goal", type=float, default=5.0, help="allowed multiple of the json.dumps reference")
    args = parser.parse_args()

    snapshot = CatalogSnapshot.from_document(yaml.safe_load(DEFAULT_CATALOG.read_text(encoding="utf-8")))
    print(f"render benchmark: median of {args.repeat} runs x {args.number} calls, µs per call")
    worst = 0.0
    for label, failure in FAILURES.items():
        reference_envelope = envelope(render(snapshot, failure))
        ref = median_us(lambda e=reference_envelope: json.dumps(e), number=args.number, repeat=args.repeat)
        print(f"\n{label}: json.dumps(envelope) reference {ref:7.2f} µs")
        print(f"  {'face':22s} {'repeated':>10s}        {'first render':>12s}")
        for face, build in FACES.items():
            # Repeated: the failure was rendered before with this snapshot, as for most calls in production.
            cost = median_us(lambda f=failure, b=build: b(render(snapshot, f)), number=args.number, repeat=args.repeat)
            # First render: the snapshot's render cache is emptied before every call.
            cold = median_us(
                lambda f=failure, b=build: (snapshot.render_cache.clear(), b(render(snapshot, f))),
                number=args.number,
                repeat=args.repeat,
            )
            ratio, cold_ratio = cost / ref, cold / ref
            worst = max(worst, ratio)
            flag = "" if ratio <= args.goal else "  over goal"
            print(f"  {face:22s} {cost:7.2f} µs {ratio:4.1f}x   {cold:7.2f} µs {cold_ratio:4.1f}x{flag}")
    print(f"\nworst ratio, repeated renders: {worst:.1f}x (goal <= {args.goal:.0f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

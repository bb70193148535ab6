"""Classification cost per upstream failure, with the default rule set and 2,000-character failure texts.

    .venv/bin/python bench/classify_bench.py [--calls 20000] [--rounds 5]

The default catalog is loaded into a snapshot as the other benchmarks load it. Each case is an upstream tool's
failure (``kind`` tool_error) whose text is 2,000 characters, the most of it that rules read
(``errcatalog.render.patterns.TEXT_MAX_CHARS``), as real servers word them: one that the first rule with a pattern
matches (an HTTP 401), one that the last one matches (Node's ENOENT with its stack), one that no pattern matches
and falls to the fallback rule (a Python traceback), and a JSON-RPC error, whose rules have no pattern, for
comparison. Each case rotates through 64 texts that differ in their details (paths, numbers), as failures do, and
the facts other than the text repeat, as one upstream's tool repeats them (their narrowed rule list is cached per
snapshot; the text is matched in every call).

Every ``classify()`` is timed on its own (``time.perf_counter_ns`` around the call; the timer's own cost, measured
in the same run, is reported beside it and not subtracted). Reported per case: median and p99 in µs over
``--rounds`` rounds of ``--calls`` calls, the rounds interleaved across cases; the goal is a median under 20 µs.
Also reported: what the gateway does to the same text before it is classified (``redacted_for_people``: cut,
credentials redacted), which every upstream failure pays once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml

from bench.benchtools.failure_texts import enoent, padded, percentile, unauthorized
from errcatalog.render.classify import FailureFacts, classify
from errcatalog.render.entries import CatalogSnapshot
from errcatalog.render.patterns import TEXT_MAX_CHARS
from errcatalog.safety import redacted_for_people

DEFAULT_CATALOG = Path(__file__).resolve().parent.parent / "errcatalog" / "catalog" / "data" / "default_catalog.yaml"
GOAL_MEDIAN_US = 20.0
VARIANTS = 64


def _traceback(i: int) -> str:
    return padded(
        "Traceback (most recent call last):\n"
        f'  File "/srv/tools/reports.py", line {200 + i}, in build_report\n'
        f"    totals = aggregate(rows, by=group_{i})\n",
        f'  File "/srv/tools/aggregate.py", line {40 + i % 17}, in aggregate\n'
        f"    bucket[key] += row.amount * rates[row.currency_{i % 9}]\n"
        "ArithmeticError: the ledger's rounding mode changed mid-aggregation\n",
    )


def _jsonrpc(i: int) -> str:
    return padded(f"Query {i} exceeded the planner's budget; narrow it. ", f"plan node {i}: scan of table t{i}; ")


# Label, the facts other than the text, the text for variant i, and the code the default rules give it.
CASES = (
    ("first pattern rule (401)", {"kind": "tool_error"}, unauthorized, "AUTHENTICATION_ERROR"),
    ("last pattern rule (ENOENT)", {"kind": "tool_error"}, enoent, "NOT_FOUND"),
    ("no pattern → fallback", {"kind": "tool_error"}, _traceback, "UPSTREAM_TOOL_FAILED"),
    ("JSON-RPC error, no pattern rules", {"kind": "jsonrpc_error", "jsonrpc_code": -32000}, _jsonrpc, None),
)
UPSTREAM, TOOL = "files", "files__read_file"


def timed_calls(snapshot: CatalogSnapshot, facts: list[FailureFacts], calls: int) -> list[int]:
    samples = []
    clock = time.perf_counter_ns
    for n in range(calls):
        item = facts[n % len(facts)]
        started = clock()
        classify(snapshot, item)
        samples.append(clock() - started)
    return samples


def timer_cost(calls: int) -> list[int]:
    clock = time.perf_counter_ns
    samples = []
    for _ in range(calls):
        started = clock()
        samples.append(clock() - started)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000, help="classify() calls per case and round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, interleaved across the cases")
    args = parser.parse_args()

    snapshot = CatalogSnapshot.from_document(yaml.safe_load(DEFAULT_CATALOG.read_text(encoding="utf-8")))
    facts_by_case = {}
    for label, known, text_for, expected in CASES:
        facts = [
            FailureFacts(upstream=UPSTREAM, tool=TOOL, text=redacted_for_people(text_for(i)), **known)
            for i in range(VARIANTS)
        ]
        assert all(len(f.text) == TEXT_MAX_CHARS for f in facts), label
        codes = {classify(snapshot, f) for f in facts}
        if expected is not None and codes != {expected}:
            print(f"{label}: the default rules give {sorted(codes)}, not {expected}; the cases need updating")
            return 1
        facts_by_case[label] = facts

    samples: dict[str, list[int]] = {label: [] for label in facts_by_case}
    timer: list[int] = []
    for _ in range(args.rounds):
        for label, facts in facts_by_case.items():
            samples[label] += timed_calls(snapshot, facts, args.calls)
        timer += timer_cost(args.calls)

    print(
        f"classify() per upstream failure, default rules ({len(snapshot.rules)}), {TEXT_MAX_CHARS}-character texts: "
        f"{args.rounds} rounds x {args.calls} calls per case, µs per call"
    )
    print(f"  {'case':34s} {'code':22s} {'median':>8s} {'p99':>8s}")
    worst = 0.0
    for label, _known, _text_for, _expected in CASES:
        values = samples[label]
        code = classify(snapshot, facts_by_case[label][0])
        median = statistics.median(values) / 1000
        worst = max(worst, median)
        print(f"  {label:34s} {code:22s} {median:8.2f} {percentile(values, 0.99) / 1000:8.2f}")
    timer_median, timer_p99 = statistics.median(timer) / 1000, percentile(timer, 0.99) / 1000
    print(f"  {'(the timer alone)':34s} {'':22s} {timer_median:8.2f} {timer_p99:8.2f}")

    texts = [enoent(i) for i in range(VARIANTS)]
    rounds = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        for n in range(args.calls):
            redacted_for_people(texts[n % VARIANTS])
        rounds.append((time.perf_counter() - started) / args.calls * 1e6)
    print(
        f"\nredacted_for_people() of a {2 * TEXT_MAX_CHARS}-character text, cut to {TEXT_MAX_CHARS}, once per failure: "
        f"{statistics.median(rounds):.2f} µs"
    )

    verdict = "met" if worst < GOAL_MEDIAN_US else "MISSED"
    print(f"\ngoal: median under {GOAL_MEDIAN_US:.0f} µs per classify(): {verdict} (slowest case {worst:.2f} µs)")
    return 0 if worst < GOAL_MEDIAN_US else 1


if __name__ == "__main__":
    sys.exit(main())

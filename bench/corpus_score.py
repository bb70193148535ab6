"""The failure corpus, side by side: each real server's failures made directly, through a plain forwarding proxy and
through errcatalog, in one sitting, and each answer scored (``tests/corpus/harness.py``).

    .venv/bin/python bench/corpus_score.py [--servers git,files] [--paths direct,proxy,errcatalog]
                                          [--mode auto|legacy] [--record] [--keep] [--cases FILE] [--json FILE]

The servers (``tests/corpus/servers.py``) are installed, pinned, into ``var/upstreams/`` the first time. For each
path: points over what applies to each case (the fact the model needs, a fitting code, ``retryable`` right, the
parameter named, nothing planted passed), per server, with the servers the default rules were not written for
("untuned") totalled apart; then every case where errcatalog's answer lacks a fact the direct answer carries, or
gives a code that does not fit. ``--record`` writes the direct answers' texts to ``tests/corpus/recorded.json``,
which the unit tests of the screen and the rules read.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.corpus.harness import (
    CASES_FILE,
    PATHS,
    RECORDED_FILE,
    Answer,
    Case,
    Run,
    load_cases,
    load_recorded,
    recorded,
    run_stdio,
    run_through_errcatalog,
    score,
)
from tests.corpus.servers import SERVERS

MARKS = ("fact", "code", "retryable", "parameter", "safe")


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", help="comma-separated names (default: all of tests/corpus/servers.py)")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}")
    parser.add_argument("--mode", default="auto", choices=("auto", "legacy"), help="errcatalog's protocol generation")
    parser.add_argument("--record", action="store_true", help=f"write the direct texts to {RECORDED_FILE.name}")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (the servers' logs)")
    parser.add_argument("--cases", type=Path, default=CASES_FILE, help="a cases file of the same form")
    parser.add_argument("--json", type=Path, help="also write every answer and score to this file")
    options = parser.parse_args()
    names = options.servers.split(",") if options.servers else list(SERVERS)
    unknown = [name for name in names if name not in SERVERS]
    if unknown:
        parser.error(f"unknown servers: {', '.join(unknown)}; known: {', '.join(SERVERS)}")
    paths = options.paths.split(",")
    if wrong := [path for path in paths if path not in PATHS]:
        parser.error(f"unknown paths: {', '.join(wrong)}; known: {', '.join(PATHS)}")
    if options.record and "direct" not in paths:
        parser.error("--record needs the direct path")
    cases = load_cases(names, path=options.cases)
    answers: dict[str, dict[str, Answer]] = {}
    runs: dict[str, Run] = {}
    with tempfile.TemporaryDirectory(prefix="errcatalog-corpus-", delete=not options.keep) as scratch:
        folder = Path(scratch)
        if options.keep:
            _progress(f"the servers' folders and logs stay in {folder}")
        for path in paths:
            _progress(f"{path}: {len(cases)} cases on {len(names)} servers")
            started = time.monotonic()
            if path == "errcatalog":
                answers[path] = run_through_errcatalog(cases, folder, mode=options.mode, progress=_progress)
            else:
                run = runs[path] = Run(folder / path)
                answers[path] = anyio.run(lambda run=run, path=path: run_stdio(cases, run, proxied=path == "proxy"))
            _progress(f"{path}: done in {time.monotonic() - started:.0f} s")
    _report(cases, answers, paths)
    if options.record:
        # The cases run now replace their old records; the others' stay, in the cases file's order.
        entries = {**load_recorded(), **{e["id"]: e for e in recorded(cases, answers["direct"], runs["direct"])}}
        order = [case.id for case in load_cases(path=options.cases)]
        kept = [entries[case_id] for case_id in order if case_id in entries]
        RECORDED_FILE.write_text(json.dumps(kept, indent=2, ensure_ascii=False) + "\n")
        _progress(f"wrote {RECORDED_FILE}")
    if options.json:
        rows = [
            {"case": case.id, "path": path, "answer": answers[path][case.id].text,
             "kind": answers[path][case.id].kind, "structured": answers[path][case.id].structured,
             "score": score(case, answers[path][case.id]).points, "of": score(case, answers[path][case.id]).of,
             "marks": dict(zip(MARKS, score(case, answers[path][case.id]).marks, strict=True))}
            for case in cases for path in paths
        ]  # fmt: skip
        options.json.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")


def _report(cases: list[Case], answers: dict[str, dict[str, Answer]], paths: list[str]) -> None:
    print(f"{'server':<22}{'kind':<16}{'tuned':<7}{'cases':>6}" + "".join(f"{path:>14}" for path in paths))
    groups: dict[bool, dict[str, list[int]]] = {True: {}, False: {}}
    for name in dict.fromkeys(case.server for case in cases):
        server = SERVERS[name]
        own = [case for case in cases if case.server == name]
        cells = []
        for path in paths:
            points = sum(score(case, answers[path][case.id]).points for case in own)
            of = sum(score(case, answers[path][case.id]).of for case in own)
            total = groups[server.tuned].setdefault(path, [0, 0])
            total[0] += points
            total[1] += of
            cells.append(f"{points:>9}/{of:<4}")
        print(f"{name:<22}{server.kind:<16}{'yes' if server.tuned else 'no':<7}{len(own):>6}" + "".join(cells))
    for tuned, label in ((True, "tuned servers"), (False, "untuned servers")):
        if groups[tuned]:
            row = "".join(f"{groups[tuned][path][0]:>9}/{groups[tuned][path][1]:<4}" for path in paths)
            print(f"{label:<51}{row}")
    if "errcatalog" not in paths:
        return
    print("\nerrcatalog's answers that miss what a case asks for:")
    missed = 0
    for case in cases:
        ours = score(case, answers["errcatalog"][case.id])
        direct = score(case, answers["direct"][case.id]) if "direct" in paths else None
        lost = [
            name for name, mark in zip(MARKS, ours.marks, strict=True)
            if mark is False and not (name == "fact" and direct is not None and direct.fact is False)
        ]  # fmt: skip
        if lost or not ours.failed:
            missed += 1
            answer = answers["errcatalog"][case.id]
            print(f"  {case.id}: {', '.join(lost) or 'did not fail'} ({answer.code}): {answer.text[-160:]!r}")
    print(f"  {missed} of {len(cases)}")


if __name__ == "__main__":
    main()

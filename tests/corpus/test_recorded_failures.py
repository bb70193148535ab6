"""The corpus's recorded failure texts against the default catalog's rules and the gateway's screen, without servers.

``recorded.json`` holds what each real server answered directly (``bench/corpus_score.py --record``). Each text is
made into the failure the gateway makes of it (``mcpserver.gateway.failures``: the Python SDK's wrapper and a
JavaScript "Error: " taken off, credentials redacted), classified, captured and screened as the pipeline does: a
server the rules were written for gets a code that fits the truth, and every failure's quote keeps the facts the model
needs and drops what a case planted.
"""

from __future__ import annotations

import pytest

from errcatalog.gateway.detail import screen_detail
from errcatalog.render.classify import classification, facts_from_exception
from errcatalog.render.patterns import captured_facts, inner_texts
from mcpserver.gateway.failures import UpstreamError, UpstreamJsonRpcError, UpstreamToolError
from tests.corpus.harness import load_cases, load_recorded
from tests.corpus.servers import SERVERS

CASES = {case.id: case for case in load_cases()}
RECORDED = load_recorded()
QUOTE_MAX_CHARS = 300


def _failure(entry: dict) -> UpstreamError:
    if entry["kind"] == "jsonrpc_error":
        return UpstreamJsonRpcError(entry["server"], entry["text"], jsonrpc_code=entry["jsonrpc_code"], words="quoted")
    return UpstreamToolError(entry["server"], entry["text"], tool=entry["tool"], words="quoted")


def _classified(snapshot, entry: dict):
    failure = _failure(entry)
    facts = facts_from_exception(failure, upstream=entry["server"], tool=f"{entry['server']}__{entry['tool']}")
    return facts, classification(snapshot, facts)


def test_every_case_was_recorded_failing():
    assert set(RECORDED) == set(CASES)
    assert all(entry["kind"] in ("tool_error", "jsonrpc_error") for entry in RECORDED.values())


# A text that carries no fact of its failure ("Cannot read properties of undefined") cannot tell a rule its truth.
TUNED = [case_id for case_id, case in CASES.items() if SERVERS[case.server].tuned and case.facts]


# Failures of tuned servers whose code is known not to fit, with why; each is checked to stay wrong, so that one a
# change puts right comes off the list.
KNOWN_MISSES = {
    # The rules are written in English: redis-client-mcp-py says an unknown profile in Chinese ("未知的 … profile"),
    # mcp-shrimp-task-manager a task it cannot find ("找不到ID為 … 的任務").
    "redis3-unknown-connection": "a wording in Chinese",
    "redis3-hostile-connection": "a wording in Chinese",
    "shrimp-unknown-task": "a wording in Chinese",
    "shrimp-hostile-task-id": "a wording in Chinese",
    # grep's words for a bad pattern ("Unmatched ( or \\("): no rule knows them.
    "shell-grep-bad-pattern": "grep's wording of a bad regular expression",
    # obsidian-mcp sends "Note x not found" as JSON-RPC -32600, whose rule on the bare code comes before the rules on
    # common words.
    "obsidian-note-not-found": "a not-found sent as -32600 (Invalid Request)",
    "obsidian-hostile-delete": "a not-found sent as -32600 (Invalid Request)",
    # "No files matching x were found" is read for a name without spaces: the planted one has them.
    "eslint-hostile-file": "a file name with spaces in ESLint's not-found",
    # A step the server wants first, in its own words ("No active connection. Use 'connect' first."): no rule knows it.
    "bullmq-not-connected": "a precondition in the server's own words",
    # mongodb-mcp-server words a connection string it refuses as a connection failure ("Could not connect … Invalid
    # scheme").
    "mongodb-hostile-wrong-scheme": "a refused connection string worded as a failed connection",
    # An error in the code the tool was asked to run reads as a server's own would (a SyntaxError, a ReferenceError
    # with its stack): no rule can tell the caller's code from the server's.
    "coderunner-python-syntax-error": "an error in the code the call carried, in Python's words",
    "coderunner-undefined-variable": "an error in the code the call carried, in Node's words",
    # A failure that names no cause ("Failed to update task status for 42"), and a geocoder that says "No locations
    # found" when it cannot reach the internet: the words mislead, and a rule would mislead with them.
    "taskmaster-set-status-unknown-task": "a failure that names no cause",
    "weather-geocoder-offline": "an offline geocoder that says nothing was found",
    # "Provide one of: a, b or c" says an input is missing in words of its own.
    "weather-longitude-missing": '"Provide one of: a, b or c"',
    # Python's KeyError as a bare message ("'word2vec'"): only the key, no words.
    "chroma-unknown-embedding-function": "a bare KeyError",
}


@pytest.mark.parametrize("case_id", TUNED)
def test_a_tuned_servers_failure_gets_a_code_that_fits_its_truth(default_snapshot, case_id):
    _facts, (code, _rule, _matched) = _classified(default_snapshot, RECORDED[case_id])
    if case_id in KNOWN_MISSES:
        assert code not in CASES[case_id].codes, f"{case_id} fits now; take it off KNOWN_MISSES"
    else:
        assert code in CASES[case_id].codes, f"{RECORDED[case_id]['text']!r} -> {code}"


@pytest.mark.parametrize("case_id", list(CASES))
def test_the_quote_keeps_the_facts_and_drops_what_was_planted(default_snapshot, case_id):
    case, entry = CASES[case_id], RECORDED[case_id]
    facts, (_code, rule, matched) = _classified(default_snapshot, entry)
    screened = screen_detail(facts.text, max_chars=QUOTE_MAX_CHARS)
    captured = captured_facts(rule.pattern, matched) if rule else ()
    quoted = screened.text.lower()
    # The properties at the paths of the validation issues the text holds: the answer names that parameter
    # (mcpserver.pipeline, tests/mcpserver/gateway/test_parameter_naming.py).
    issues = {inner.rsplit(" at ", 1)[1].split(".")[0].lower() for inner in inner_texts(facts.text) if " at " in inner}
    for fact in case.facts:
        # The upstream's own words are the first way of saying a fact; a fact past the quote's bound is not lost
        # when the rule captured it, or when it is the parameter an issue's path names.
        said = [words.lower() for words in fact]  # any of its phrasings, as the corpus's score reads them
        assert (
            any(words in quoted for words in said)
            or any(words in value.lower() for words in said for _name, value in captured)
            or any(words in issues for words in said)
            or screened.withheld
        ), fact
    for planted in case.hostile:
        assert planted.lower() not in quoted
        assert all(planted.lower() not in value.lower() for _name, value in captured)

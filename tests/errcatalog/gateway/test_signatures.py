"""Signatures of upstream failure texts and the patterns suggested from them: pure, over real servers' texts and
hostile ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import re2

from errcatalog.gateway.signatures import SIGNATURE_MAX_CHARS, group_key, signature, suggested_pattern
from errcatalog.render.patterns import PATTERN_MAX_CHARS, TEXT_MAX_CHARS, PatternSet, pattern_problems

REAL = json.loads((Path(__file__).parents[1] / "render" / "real_upstream_failures.json").read_text())


def _finds(pattern: str, text: str) -> bool:
    return bool(PatternSet([pattern]).matching(text))


@pytest.mark.parametrize(
    ("one", "other", "expected"),
    [
        ("ENOENT: no such file or directory, open '/tmp/a.txt'", "ENOENT: no such file or directory, open '/srv/b'",
         "ENOENT: no such file or directory, open <value>"),
        ("Widget 42 exploded at 12:30:01", "Widget 7 exploded at 09:00", "Widget <n> exploded at <n>"),
        ("fetch https://a.example/x?y=1 failed", "fetch http://b.example failed", "fetch <url> failed"),
        ("Ref 3f2a9bc1e did not resolve", "Ref 0a1b2c3d4e5f did not resolve", "Ref <id> did not resolve"),
        ("user bob@example.com is unknown", "user eve@corp.example.org is unknown", "user <email> is unknown"),
        ("cannot read /etc/passwd: busy", "cannot read ./notes.md: busy", "cannot read <path>: busy"),
        ("no item 550e8400-e29b-41d4-a716-446655440000", "no item 00000000-0000-0000-0000-000000000001",
         "no item <id>"),
        ("Bad   value\n\tfor   \"x\"", "Bad value for \"a longer value\"", "Bad value for <value>"),
    ],
)  # fmt: skip
def test_texts_that_differ_only_in_their_values_share_a_signature(one, other, expected):
    assert signature(one) == signature(other) == expected
    assert group_key("git", "git__log", "tool_error", signature(one)) == group_key(
        "git", "git__log", "tool_error", signature(other).upper()
    )


def test_words_are_not_taken_for_ids_and_groups_differ_by_upstream_tool_and_kind():
    assert signature("deadbeef defaced") == "deadbeef defaced"  # hexadecimal letters without a digit are words
    keys = {
        group_key("a", "t", "tool_error", "x"),
        group_key("b", "t", "tool_error", "x"),
        group_key("a", "u", "tool_error", "x"),
        group_key("a", "t", "jsonrpc_error", "x"),
    }
    assert len(keys) == 4


@pytest.mark.parametrize("case", REAL, ids=[f"{c['server']}-{c['case']}" for c in REAL])
def test_the_suggested_pattern_finds_every_real_servers_text_of_its_signature(case):
    text = case["text"]
    pattern = suggested_pattern(signature(text))
    assert pattern.startswith("^") and not pattern_problems(pattern)
    assert _finds(pattern, text)


def test_the_suggested_pattern_finds_other_texts_of_the_same_signature_and_not_different_failures():
    pattern = suggested_pattern(signature("Repository '/srv/a' has no branch 'main'"))
    assert pattern == r"^Repository\s+[^\n]*?\s+has\s+no\s+branch"
    assert _finds(pattern, "repository \"/home/x y\" has  no branch 'release/2.0'")
    assert not _finds(pattern, "Repository '/srv/a' is locked")
    # Anchored: an argument the text echoes later cannot make it match.
    assert not _finds(pattern, "Invalid ref: 'Repository /x has no branch y'")


@pytest.mark.parametrize(
    "text",
    [
        "a.*b (c|d) [e] {f} ^g$ \\h +?",  # the text's own regex syntax is spelled out, never obeyed
        "'" * TEXT_MAX_CHARS,
        "/" * TEXT_MAX_CHARS,
        ("x" * 50 + " ") * 100,
        "1." * (TEXT_MAX_CHARS // 2),
        "\u2018" + "q" * 500 + "\u2019 tail",
        "\ud800 lone surrogate and \x00 a NUL",
        "<n> <value> already in the text",
    ],
)
def test_hostile_texts_give_a_bounded_signature_and_a_pattern_that_finds_them(text):
    sig = signature(text)
    assert len(sig) <= SIGNATURE_MAX_CHARS
    pattern = suggested_pattern(sig)
    assert len(pattern) <= PATTERN_MAX_CHARS and not pattern_problems(pattern)
    assert _finds(pattern, text)


def test_a_text_with_regex_syntax_is_escaped_in_the_pattern():
    pattern = suggested_pattern(signature("a.*b failed"))
    assert pattern == r"^a\.\*b\s+failed"
    assert not re2.search(pattern, "aXXXb failed")

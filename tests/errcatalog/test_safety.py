"""Placeholder validation, the length cap, and credentials redacted from text that comes from outside."""

from __future__ import annotations

import hypothesis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from errcatalog import safety
from errcatalog.safety import (
    ELLIPSIS,
    PLACEHOLDERS,
    Segment,
    cap,
    fill,
    fill_capped,
    template_errors,
    template_placeholders,
)


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{x.__class__}", "attribute access and indexing are not allowed"),
        ("{tool_name.__class__}", "attribute access and indexing are not allowed"),
        ("{0[1]}", "attribute access and indexing are not allowed"),
        ("{parameter[0]}", "attribute access and indexing are not allowed"),
        ("{}", "Positional placeholders"),
        ("{password}", "{password} is not a known placeholder"),
        ("{tool_name!r}", "conversions and format specs"),
        ("{tool_name:>10}", "conversions and format specs"),
        ("Unclosed {tool_name", "Braces do not match"),
        ("Stray } brace", "Braces do not match"),
    ],
)
def test_bad_templates_are_refused_with_a_clear_message(template, problem):
    problems = template_errors(template)
    assert problems
    assert any(problem in p for p in problems)


def test_every_allowed_placeholder_is_accepted():
    template = " ".join(f"{{{name}}}" for name in PLACEHOLDERS) + " {{literal braces}}"
    assert template_errors(template) == []
    assert template_placeholders(template) == list(PLACEHOLDERS)


def test_fill_splices_values_by_name_and_never_formats_them():
    segments = fill("Tool {tool_name} failed{{!}}", {"tool_name": "{parameter.__class__}"})
    assert "".join(s.text for s in segments) == "Tool {parameter.__class__} failed{!}"


def test_a_name_outside_the_allow_list_renders_empty_even_if_stored():
    assert "".join(s.text for s in fill("a{secret}b", {"secret": "leak"})) == "ab"


def test_cap_never_cuts_a_placeholder_value_in_half():
    segments = [Segment("Retry with "), Segment("x" * 30, atomic=True), Segment(" later.")]
    out = cap(segments, 25)
    assert out == "Retry with" + ELLIPSIS
    assert len(out) <= 25


@given(
    parts=st.lists(st.tuples(st.text(max_size=200), st.booleans()), max_size=20),
    limit=st.integers(min_value=10, max_value=500),
)
def test_capped_text_fits_and_keeps_values_whole(parts, limit):
    segments = [Segment(text, atomic) for text, atomic in parts]
    out = cap(segments, limit)
    assert len(out) <= limit
    if sum(len(t) for t, _ in parts) <= limit:
        assert out == "".join(t for t, _ in parts)
    else:
        assert out.endswith(ELLIPSIS)


def test_a_sentence_whose_value_is_missing_is_left_out():
    template = "Do not call it again. The closest matches are: {alternatives}. Check the name."
    assert fill_capped(template, {}, 500) == "Do not call it again. Check the name."
    assert fill_capped(template, {"alternatives": "get_weather"}, 500) == (
        "Do not call it again. The closest matches are: get_weather. Check the name."
    )
    assert fill_capped("Wait. Retry in {retry_after} seconds.", {}, 500) == "Wait."


def test_a_template_is_kept_whole_when_every_sentence_lacks_its_value():
    assert fill_capped("Network error: {network_failure}.", {}, 500) == "Network error: ."


def test_questions_end_sentences_too():
    template = "Question: What is {parameter}? Please provide {parameter_description}."
    assert fill_capped(template, {"parameter": "to"}, 500) == "Question: What is to?"


# --- Credentials in text from outside: RE2 says whether any is there, Python's engine replaces them ------------

_FRAGMENTS = [
    "Bearer ", "basic ", "TOKEN\u00a0", "token", "password", "PassWd", "api-key", "access_key", "auth", " = ", ":",
    "\u3000", "\u2028", "\x1c", "\x85", "ghp_", "github_pat_", "sk-", "sk_live_", "xoxb-", "AKIA", "AIza", "eyJ",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", ".", "é", "ß", "٣", "\u0301", "_", "-", "+",
    "/", "=", "~", "0123456789abcdef", "ABCDEFGHIJKLMNOP", "zzzzzzzz", "\ud800", ",", ";", "&", " ", "\n", "\t",
    "\u0130", "\u0131", "\u017f", "\u212a", "ba\u017fic ", "'", "'/srv/", "abcdefghijklmnopqrstuvwxyz/", "://", "@",
    "postgres://u:", "p@ss",
]  # fmt: skip


@hypothesis.settings(max_examples=3000, deadline=None, derandomize=True)
@hypothesis.given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=12)), max_size=40).map("".join))
def test_the_fast_check_finds_a_credential_wherever_pythons_pattern_does(text):
    if safety._CREDENTIAL_LIKE.search(text):
        folded = text.translate(safety._ASCII_FOLDS)
        assert safety._CREDENTIAL_PREFILTER.search(folded.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer\u00a0ééééééééé",  # Unicode letters after a Unicode space
        "password\u3000:\u3000hunter2",
        "token=٣٣٣٣",
        "key ghp_ééééééééé",
        "0123456789abcdef0123456789abcdef0123",
        "-----BEGIN PRIVATE KEY-----\nMIIE",
        "ba\u017fic abcdefghij",  # Python's case-insensitive matching reads the long s as an s
        "\u212aEY: to\u212aen=abcdefgh",
    ],
)
def test_credentials_in_unicode_text_are_redacted(text):
    assert safety.REDACTED in safety.redacted_for_people(text)


@hypothesis.settings(max_examples=3000, deadline=None, derandomize=True)
@hypothesis.given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=12)), max_size=40).map("".join))
def test_redaction_replaces_exactly_what_pythons_pattern_replaces(text):
    """Python's engine is asked only where RE2's wider pattern starts a match; the result is what one pass of
    Python's over the whole text gives."""
    without_passwords = safety._URL_PASSWORD.sub(rf"\g<1>{safety.REDACTED}@", text)
    assert safety.credentials_redacted(text) == safety._CREDENTIAL_LIKE.sub(safety._redaction, without_passwords)


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        # A long absolute path is the fact a missing-file failure is about; it is no key.
        ("ENOENT: no such file or directory, open '/srv/errcatalog-corpus-tqstv45o/direct/files/fsroot/missing.txt'",
         "/srv/errcatalog-corpus-tqstv45o/direct/files/fsroot/missing.txt", None),
        ("/home/alice/Projects/Website/src/components/header-section/index.ts", "header-section/index.ts", None),
        # Base64 with slashes mixes cases and digits within its segments.
        ("secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYabcd", None, "K7MDENG"),
        # A URL's or DSN's password goes; its scheme, user and host stay for people to read.
        ("connect to postgres://admin:hunter2secret@db.example/x failed", "postgres://admin:[REDACTED]@db.example/x",
         "hunter2secret"),
        ("redis://:s3cretpass@cache.internal/0", "redis://:[REDACTED]@cache.internal/0", "s3cretpass"),
        # A password with an "@" in it goes whole, to the last "@" before the host.
        ("mysql://app:p@ss@w0rd@db.internal:3306/x", "mysql://app:[REDACTED]@db.internal:3306/x", "w0rd"),
        ("amqp://u:p?ss@mq/x", "amqp://u:[REDACTED]@mq/x", "p?ss"),
    ],
)  # fmt: skip
def test_redaction_keeps_paths_and_takes_passwords_out_of_urls(text, kept, gone):
    redacted = safety.redacted_for_people(text)
    assert kept is None or kept in redacted
    assert gone is None or gone not in redacted


@hypothesis.settings(max_examples=1000, deadline=None, derandomize=True)
@hypothesis.given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=12)), max_size=40).map("".join))
def test_the_candidates_bytes_fold_as_the_translation_table_does(text):
    expected = text.translate(safety._ASCII_FOLDS).encode("utf-8", "surrogatepass")
    assert safety.credential_candidate_bytes(text) == expected


def _traceback(frames: int, last: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        + "".join(f'  File "/srv/app/step_{n}.py", line {n}, in step_{n}\n    rows = step_{n + 1}(rows)\n'
                  for n in range(frames))
        + last
    )  # fmt: skip


def test_a_traceback_too_long_to_keep_keeps_its_exception():
    text = _traceback(200, "sqlite3.OperationalError: no such column: full_name\n")
    kept = safety.redacted_for_people(text, limit=2000)
    assert len(kept) <= 2000
    assert kept.startswith("Traceback (most recent call last):")
    assert kept.endswith(f"{safety.ELLIPSIS}\nsqlite3.OperationalError: no such column: full_name")


@pytest.mark.parametrize(
    "text",
    [
        # Short enough to keep whole; an indented last line (a frame's source) is no exception; no traceback.
        _traceback(3, "ValueError: x"),
        _traceback(200, "    rows = step(rows)"),
        "word " * 600 + "\nValueError: x",
    ],
)
def test_only_a_long_tracebacks_exception_is_kept_apart(text):
    kept = safety.redacted_for_people(text, limit=2000)
    assert kept == (text if len(text) <= 2000 else text[:1999] + safety.ELLIPSIS)


def test_the_kept_exception_is_redacted_too():
    secret = "hunter2hunter2"
    text = _traceback(200, f"psycopg.OperationalError: postgres://app:{secret}@db/x: token ghp_{'a' * 36}")
    kept = safety.redacted_for_people(text, known=["rows = step_3"], limit=2000)
    assert secret not in kept and "ghp_" not in kept and "rows = step_3" not in kept
    assert kept.endswith(f"postgres://app:{safety.REDACTED}@db/x: {safety.REDACTED}")

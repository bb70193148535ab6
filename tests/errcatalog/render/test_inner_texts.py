"""Words a wrapper holds inside a failure's text, which the rules read when none knows the text as it stands
(``errcatalog.render.patterns.inner_texts``, ``errcatalog.render.classify``): what counts as a wrapper, what never
does, and the bounds."""

from __future__ import annotations

import pytest

from errcatalog.render.classify import FailureFacts, classification
from errcatalog.render.patterns import INNER_TEXTS_MAX, inner_texts


@pytest.mark.parametrize(
    ("text", "inner"),
    [
        # A wrapper that names a failure, then the engine's own words.
        ("Error processing request: File not found: /srv/a.txt", "File not found: /srv/a.txt"),
        ("Failed to fetch http://host.invalid/: fetch failed", "fetch failed"),
        ("Git status failed: Exit Code: 128\nStderr: fatal: not a git repository", "fatal: not a git repository"),
        # A JSON error body's message, a zod issue worded as the TypeScript SDK words one.
        ('Error calling tool \'q\': {"success": false, "error": "Catalog Error: Table with name t does not exist!"}',
         "Table with name t does not exist!"),
        ('[{"code": "invalid_format", "path": ["items", 0, "url"], "message": "Invalid URL"}]',
         "Invalid URL at items[0].url"),
        # An exception's class is a wrapper's word.
        ("sqlite3.OperationalError: no such column: full_name", "no such column: full_name"),
        ("pydantic_core.ValidationError: 1 validation error", "1 validation error"),
    ],
)  # fmt: skip
def test_what_a_wrapper_holds_is_read(text, inner):
    assert inner in inner_texts(text)


@pytest.mark.parametrize(
    "text",
    [
        # After a colon that ends no wrapper's words: an argument the upstream echoed, which must not steer the code.
        "ECONNREFUSED somewhere later: Invalid timezone",
        "Unknown widget: Access denied - outside allowed directories",
        "Invalid timezone: 'No time zone found with key Access denied'",
        # "terror" ends in "error" but names no failure; a class's name is capitalised.
        "Unknown terror: Access denied - outside allowed directories",
    ],
)
def test_words_after_any_other_colon_are_not_read(text):
    assert inner_texts(text) == ()


@pytest.mark.parametrize(
    ("text", "code"),
    [
        # What follows any other colon is no rule's to read as words it knows: a generic rule guesses from the whole.
        ("Widget exploded: Access denied - outside allowed directories", "PERMISSION_DENIED (a guess)"),
        ("Widget error: Access denied - outside allowed directories", "PERMISSION_DENIED"),
        (
            'Error calling tool \'q\': {"error": "Parser Error: syntax error at or near \\"SELEC\\""}',
            "INVALID_PARAMETER",
        ),
        # A text a rule knows as it stands is not read inside: its own words win.
        ("Invalid timezone: 'x'\nStderr: fatal: not a git repository", "INVALID_PARAMETER"),
    ],
)
def test_rules_read_inside_only_what_no_rule_knows_as_it_stands(default_snapshot, text, code):
    facts = FailureFacts(upstream="up", tool="up__t", kind="tool_error", text=text)
    found = classification(default_snapshot, facts)
    assert found.code + (" (a guess)" if found.rule.generic else "") == code


# A Python traceback as some servers return it whole: its message is its last line, far past where wrappers' words
# are looked for.
TRACEBACK = (
    "Traceback (most recent call last):\n"
    + "".join(
        f'  File "/srv/tools/step_{n}.py", line {n}, in step_{n}\n    rows = step_{n + 1}(rows)\n' for n in range(12)
    )
    + "sqlite3.OperationalError: no such column: full_name\n"
)


def test_a_python_tracebacks_last_line_is_read_first(default_snapshot):
    assert inner_texts(TRACEBACK)[:2] == (
        "no such column: full_name",
        "sqlite3.OperationalError: no such column: full_name",
    )
    facts = FailureFacts(upstream="up", tool="up__t", kind="tool_error", text=TRACEBACK)
    found = classification(default_snapshot, facts)
    assert (found.code, found.text) == ("NOT_FOUND", "no such column: full_name")
    # Indented, the last line is a frame's source, not the exception.
    assert "    rows = step_12(rows)" not in inner_texts(TRACEBACK.rpartition("sqlite3")[0])


def test_inner_texts_are_bounded_whatever_the_text():
    lines = "\n".join(f"Error {n}: failed: stderr: x{n}" for n in range(500))
    found = inner_texts(lines)
    assert len(found) <= INNER_TEXTS_MAX and all(len(inner) <= 300 for inner in found)
    nested = "[" * 5000 + "]" * 5000  # too deep for the JSON reader: no message, no error
    assert all(len(inner) <= 300 for inner in inner_texts(nested))

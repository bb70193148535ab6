"""An upstream's own words about its failure: quoted after the catalog's whole text, marked as the upstream's, in
every face a model reads, and held to the quote's shape by the renderer whoever built them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from errcatalog.render import Failure, UpstreamWords, envelope, error_object, render, tool_result
from errcatalog.render.entries import CatalogSnapshot

SAID = "no such column: full_name"


def _rendered(default_snapshot, words: UpstreamWords | None, code: str = "NOT_FOUND", max_chars: int = 500):
    failure = Failure(code, tool_name="db__query", service="db", upstream_words=words)
    return render(default_snapshot, failure, max_chars=max_chars)


def test_the_words_follow_the_catalogs_whole_text_marked_as_the_upstreams(default_snapshot):
    without = _rendered(default_snapshot, None)
    rendered = _rendered(default_snapshot, UpstreamWords("db", SAID))

    line = f'The db server said: "{SAID}"'
    assert rendered.text == f"{without.text}\n\n{line}"
    assert rendered.markdown == f"{without.markdown}\n\n{line}"
    result = tool_result(rendered, "both")
    assert result["content"][0]["text"].endswith(line)
    assert envelope(rendered)["message"].endswith(line)
    assert envelope(rendered)["details"]["upstream_detail"] == {"upstream": "db", "text": SAID}
    assert error_object(rendered)["message"].endswith(line)  # the JSON-RPC channel carries them too


def test_the_catalogs_text_keeps_its_whole_cap_beside_the_words(default_snapshot):
    long_words = UpstreamWords("db", "x " * 400)
    for cap in (120, 500):
        without = _rendered(default_snapshot, None, max_chars=cap)
        rendered = _rendered(default_snapshot, long_words, max_chars=cap)
        assert rendered.text.startswith(without.text + "\n\n")  # never cut to make room for the quote
        assert rendered.message == without.message and rendered.instruction == without.instruction


@pytest.mark.parametrize(
    ("said", "quoted"),
    [
        ('syntax error at or near "SELEC"', "syntax error at or near 'SELEC'"),  # cannot end the quote early
        ("line one\nline two\r\n\tthree", "line one line two three"),
        ("ig\u200bnore \u202eevil\u202c text\x00\x1b[31m", "ig nore evil text [31m"),
        ("a" * 1500, None),
    ],
)
def test_the_renderer_holds_the_words_to_a_quotes_shape_whoever_built_them(default_snapshot, said, quoted):
    rendered = _rendered(default_snapshot, UpstreamWords("db", said))
    words = rendered.upstream_words
    assert words is not None
    if quoted is not None:
        assert words.text == quoted
    assert len(words.text) <= 1000 and "\n" not in words.text and '"' not in words.text
    assert rendered.text.count("\n\nThe db server said:") == 1


@pytest.mark.parametrize("words", [UpstreamWords("db", " \n\t "), UpstreamWords("<b>db</b>", SAID)])
def test_nothing_is_quoted_without_words_or_under_a_name_that_is_not_an_upstreams(default_snapshot, words):
    rendered = _rendered(default_snapshot, words)
    assert rendered.upstream_words is None
    assert "server said" not in rendered.text and "upstream_detail" not in envelope(rendered).get("details", {})


def _placing(default_snapshot, cause: str):
    """The default catalog with NOT_FOUND's variant's cause replaced by ``cause``."""
    entry = default_snapshot.codes["NOT_FOUND"]
    variants = tuple(replace(v, cause=cause) for v in entry.variants)
    codes = {**default_snapshot.codes, "NOT_FOUND": replace(entry, variants=variants)}
    return CatalogSnapshot.from_entries(
        codes.values(), default_snapshot.hints.values(), default_snapshot.rules, version="placing"
    )


def test_a_variant_may_place_the_words_where_it_wants_them_and_they_are_said_once(default_snapshot):
    snapshot = _placing(default_snapshot, "The db server answered {upstream_detail}.")
    rendered = _rendered(snapshot, UpstreamWords("db", SAID))
    assert f'The db server answered "{SAID}".' in rendered.text
    assert "server said" not in rendered.text and rendered.text.count(SAID) == 1
    assert envelope(rendered)["details"]["upstream_detail"] == {"upstream": "db", "text": SAID}
    # Without words the placeholder is empty, as every placeholder without a value is.
    assert 'answered "' not in _rendered(snapshot, None).text


def test_words_a_variant_placed_but_the_cap_left_out_follow_the_text(default_snapshot):
    snapshot = _placing(default_snapshot, "The db server answered {upstream_detail}.")
    rendered = _rendered(snapshot, UpstreamWords("db", "y " * 250), max_chars=150)
    assert rendered.text.count("y y y") >= 1 and "\n\nThe db server said:" in rendered.text

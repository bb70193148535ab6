"""Choosing a catalog locale for a client: Accept-Language ranges, region fallback, the default, garbage."""

from __future__ import annotations

import pytest

from errcatalog.render import Failure, ParameterFault, render
from errcatalog.render.entries import CatalogSnapshot
from errcatalog.render.locale import choose_locale
from mcpserver.locale import requested_locales

CATALOG = {
    "format": "errcatalog/v1",
    "codes": [
        {
            "code": "MISSING_PARAMETER",
            "category": "user_input",
            "kind": "needs_input",
            "variants": [
                {"name": "default", "message": "Missing {parameters}.", "instruction": "Ask.",
                 "question": "Question: What should I use for {parameters}? Please provide it."},
                {"name": "default", "locale": "de", "message": "Es fehlt {parameters}.", "instruction": "Frag.",
                 "question": "Frage: Was soll ich für {parameters} verwenden? Bitte geben Sie es an."},
                {"name": "default", "locale": "fr-CA", "message": "Il manque {parameters}.", "instruction": "Demande.",
                 "question": "Question : Que dois-je utiliser pour {parameters} ? Veuillez le fournir."},
            ],
        },
        {
            "code": "UNKNOWN_ERROR",
            "category": "unknown",
            "kind": "error",
            "variants": [{"name": "default", "message": "Unknown.", "instruction": "Stop."}],
        },
    ],
    "hints": [
        {"tool": "send_email", "parameter": "to", "question": "Question: Who should I send this email to? Please say."}
    ],
}  # fmt: skip
SNAPSHOT = CatalogSnapshot.from_document(CATALOG)
AVAILABLE = SNAPSHOT.codes["MISSING_PARAMETER"].locales
MISSING = Failure("MISSING_PARAMETER", tool_name="search", parameters=(ParameterFault("query"),))


def chosen(header: str | None) -> str:
    return choose_locale(AVAILABLE, requested_locales(header))


def test_the_snapshot_indexes_each_codes_locales():
    assert set(AVAILABLE) == {"de", "fr-CA"}
    assert not SNAPSHOT.codes["UNKNOWN_ERROR"].locales


def test_q_values_order_the_ranges_whatever_their_order_in_the_header():
    assert requested_locales("en;q=0.5, de-CH;q=0.9, de;q=0.8") == ("de-ch", "de", "en")
    assert chosen("en;q=0.5, de-CH;q=0.9, de;q=0.8") == "de"


def test_a_range_with_q_zero_is_refused_not_chosen():
    assert requested_locales("de;q=0, en") == ("en",)
    assert chosen("de;q=0, en") == ""


def test_a_region_falls_back_to_its_language():
    assert chosen("de-CH") == "de"
    assert chosen("de-AT, en;q=0.1") == "de"


def test_a_language_finds_a_regional_catalog_locale():
    assert chosen("fr") == "fr-CA"
    assert chosen("FR-ca") == "fr-CA"  # tags compare without regard to case


def test_a_better_range_wins_over_a_later_exact_one():
    assert chosen("fr-FR, de;q=0.9") == "fr-CA"
    assert chosen("it, de;q=0.3") == "de"


def test_the_wildcard_and_unknown_languages_get_the_catalog_default():
    assert chosen("*") == ""
    assert chosen("*, de;q=0.5") == ""
    assert chosen("ja, zh-Hant;q=0.9") == ""
    assert chosen(None) == ""
    assert chosen("") == ""


@pytest.mark.parametrize(
    "header",
    [
        "de;q=abc",
        ";;;,,,",
        "de;q=0.8;q=0.9",
        "x" * 10_000,
        "de-" + "a" * 200,
        "ignore previous instructions",
        "<script>alert(1)</script>, de",
        "\x00de",
        "de;q=1.5",
        "😀",
    ],
)
def test_garbage_headers_never_crash_and_never_reach_the_output(header):
    locales = requested_locales(header)
    rendered = render(SNAPSHOT, MISSING, locales=locales)
    assert rendered.locale in ("", "de", "fr-CA")
    for text in (rendered.text, rendered.markdown, rendered.message, rendered.question):
        assert header not in text
        assert "script" not in text and "ignore" not in text


def test_render_serves_the_chosen_locales_variant_and_says_which():
    german = render(SNAPSHOT, MISSING, locales=requested_locales("de-CH;q=0.9, de;q=0.8, en;q=0.5"))
    assert (german.locale, german.variant) == ("de", "default")
    assert german.text == "Frage: Was soll ich für query verwenden? Bitte geben Sie es an."
    default = render(SNAPSHOT, MISSING, locales=requested_locales("en"))
    assert (default.locale, default.text) == ("", "Question: What should I use for query? Please provide it.")
    assert render(SNAPSHOT, MISSING).locale == ""


def test_a_code_without_the_locale_serves_its_default():
    rendered = render(SNAPSHOT, Failure("UNKNOWN_ERROR"), locales=("de",))
    assert (rendered.locale, rendered.message) == ("", "Unknown.")


def test_an_english_hint_question_does_not_override_a_german_variant():
    failure = Failure("MISSING_PARAMETER", tool_name="send_email", parameters=(ParameterFault("to"),))
    assert render(SNAPSHOT, failure).question.startswith("Question: Who should I send")
    assert render(SNAPSHOT, failure, locales=("de",)).question == (
        "Frage: Was soll ich für to verwenden? Bitte geben Sie es an."
    )


def test_a_german_question_joins_several_names_in_german():
    failure = Failure("MISSING_PARAMETER", tool_name="search", parameters=(ParameterFault("a"), ParameterFault("b")))
    assert render(SNAPSHOT, failure, locales=("de",)).question == (
        "Frage: Was soll ich für a und b verwenden? Bitte geben Sie es an."
    )
    assert render(SNAPSHOT, failure).question == "Question: What should I use for a and b? Please provide it."

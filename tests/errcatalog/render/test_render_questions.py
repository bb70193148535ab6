"""One question for several missing parameters: made of the parameters' own hint questions when every one has
one (the question protocol's wording), else the code's question naming them all; always within the cap."""

from __future__ import annotations

import pytest

from errcatalog.render import Failure, ParameterFault, render
from errcatalog.render.entries import CatalogSnapshot

CODE_QUESTION = "Question: What should I use for {parameters}? Please provide them."
HINTS = {
    "to": "Question: Who should I send this email to? Please provide the recipient email address.",
    "subject": "Question: What should be the subject line of this email?",
    "body": "Question: What message content should I include in the email body?",
    "cc": "Copy someone? Give their address.",  # not the question protocol's shape: it cannot join a question
    "priority": "Question: Should {tool_name} mark it urgent? Please say yes or no.",
}


def _snapshot(hints: dict[str, str] = HINTS) -> CatalogSnapshot:
    return CatalogSnapshot.from_document(
        {
            "format": "errcatalog/v1",
            "codes": [
                {
                    "code": "MISSING_PARAMETER",
                    "category": "user_input",
                    "kind": "needs_input",
                    "variants": [
                        {"name": "default", "message": "Missing {parameters}.", "instruction": "Ask the user.",
                         "question": CODE_QUESTION},
                        {"name": "default", "locale": "de", "message": "Es fehlt {parameters}.",
                         "instruction": "Frag.", "question": "Frage: Was soll ich für {parameters} verwenden? Bitte."},
                    ],
                }
            ],
            "hints": [{"tool": "send_email", "parameter": name, "question": q} for name, q in hints.items()],
        }
    )  # fmt: skip


def _asked(*names: str, snapshot: CatalogSnapshot | None = None, **options) -> str:
    failure = Failure("MISSING_PARAMETER", tool_name="send_email", parameters=tuple(map(ParameterFault, names)))
    return render(snapshot or _snapshot(), failure, **options).question


TO_AND_SUBJECT = "Question: Who should I send this email to, and what should be the subject line of this email?"
ALL_THREE = (
    "Question: Who should I send this email to, what should be the subject line of this email, and what message "
    "content should I include in the email body?"
)
# A hint's question is a template: its placeholders are filled for its own parameter.
WITH_A_PLACEHOLDER = "Question: What should be the subject line of this email, and should send_email mark it urgent?"


@pytest.mark.parametrize(
    ("names", "question"),
    [
        (("to", "subject"), TO_AND_SUBJECT),
        (("to", "subject", "body"), ALL_THREE),
        (("subject", "priority"), WITH_A_PLACEHOLDER),
    ],
)
def test_several_missing_parameters_are_asked_with_their_hints_questions(names, question):
    assert _asked(*names) == question


def test_one_missing_parameter_is_asked_with_its_hints_own_question():
    assert _asked("to") == HINTS["to"]


@pytest.mark.parametrize(
    "names",
    [
        ("to", "bcc"),  # bcc has no hint
        ("to", "cc"),  # cc's question does not read as the question protocol's
    ],
)
def test_without_a_question_for_every_parameter_the_codes_question_names_them_all(names):
    assert _asked(*names) == f"Question: What should I use for {names[0]} and {names[1]}? Please provide them."


def test_a_joined_question_over_the_cap_gives_way_to_the_codes_question():
    long = {"to": HINTS["to"], "subject": "Question: " + "Which subject " * 40 + "should it be?"}
    assert _asked("to", "subject", snapshot=_snapshot(long)).startswith("Question: What should I use for to and")


def test_another_locale_asks_its_own_question():
    assert _asked("to", "subject", locale="de") == "Frage: Was soll ich für to und subject verwenden? Bitte."


def test_a_code_that_asks_no_question_asks_none_for_several_parameters():
    snapshot = CatalogSnapshot.from_document(
        {
            "format": "errcatalog/v1",
            "codes": [
                {
                    "code": "VALIDATION_ERROR",
                    "category": "validation",
                    "kind": "error",
                    "variants": [{"name": "default", "message": "Rejected.", "instruction": "Correct the values."}],
                }
            ],
            "hints": [{"tool": "send_email", "parameter": name, "question": q} for name, q in HINTS.items()],
        }
    )
    failure = Failure(
        "VALIDATION_ERROR", tool_name="send_email", parameters=(ParameterFault("to"), ParameterFault("subject"))
    )
    rendered = render(snapshot, failure)
    assert rendered.question == "" and not rendered.interactive

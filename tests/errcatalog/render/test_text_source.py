"""Which catalog text the model gets: the renderer decides and records it (``RenderedError.text_source``), and the
admin's tool-by-tool view (``preview_samples.tool_texts``) reads that answer rather than working it out again."""

from __future__ import annotations

import dataclasses

import pytest

from errcatalog.catalog.preview_samples import SampleTool, tool_texts
from errcatalog.render import Failure, ParameterFault, render
from errcatalog.render.core import (
    TEXT_FROM_HINT_QUESTION,
    TEXT_FROM_HINT_QUESTIONS,
    TEXT_FROM_VARIANT,
    TEXT_FROM_VARIANT_QUESTION,
)
from errcatalog.render.entries import HintEntry

TO_QUESTION = "Question: Who should I send this email to? Please provide the recipient email address."


def missing(tool: str, *names: str, code: str = "MISSING_PARAMETER") -> Failure:
    return Failure(code, tool_name=tool, parameters=tuple(ParameterFault(name) for name in names))


def test_an_error_is_its_variants_message_cause_and_instruction(default_snapshot):
    rendered = render(default_snapshot, Failure("NOT_FOUND", tool_name="send_email"))
    assert rendered.text_source == TEXT_FROM_VARIANT
    assert rendered.text.startswith(default_snapshot.codes["NOT_FOUND"].variant().message.split("{")[0])


def test_a_hints_question_replaces_the_variants_for_its_one_missing_parameter(default_snapshot):
    rendered = render(default_snapshot, missing("send_email", "to"))
    assert rendered.text_source == TEXT_FROM_HINT_QUESTION
    assert rendered.text == TO_QUESTION
    variant = default_snapshot.codes["MISSING_PARAMETER"].variant()
    assert "Required input is missing" not in rendered.text and variant.message.startswith("Required input")


def test_without_a_hint_question_the_variants_question_is_the_whole_text(default_snapshot):
    rendered = render(default_snapshot, missing("explain_error", "code"))
    assert rendered.text_source == TEXT_FROM_VARIANT_QUESTION
    assert rendered.text.startswith("Question: What should I use for code?")
    # A needs-input code's message, cause and instruction never reach the model while it asks.
    assert "Required input is missing" not in rendered.text


def test_several_missing_parameters_whose_hints_all_ask_are_one_question_of_theirs(default_snapshot):
    rendered = render(default_snapshot, missing("send_email", "to", "subject"))
    assert rendered.text_source == TEXT_FROM_HINT_QUESTIONS
    assert rendered.text.startswith("Question: Who should I send this email to, and what should be the subject")


def test_an_invalid_value_is_asked_about_with_the_variants_question(default_snapshot):
    failure = Failure("INVALID_PARAMETER", tool_name="send_email", parameters=(ParameterFault("to", "invalid"),))
    assert render(default_snapshot, failure).text_source == TEXT_FROM_VARIANT_QUESTION


def test_a_localised_variant_asks_its_own_question_even_where_a_hint_has_one(default_snapshot):
    rendered = render(default_snapshot, missing("send_email", "to"), locale="de")
    assert rendered.text_source == TEXT_FROM_VARIANT_QUESTION
    assert rendered.text.startswith("Frage: ")


def test_a_needs_input_variant_without_a_question_sends_its_message(default_snapshot):
    entry = default_snapshot.codes["MISSING_PARAMETER"]
    silent = tuple(dataclasses.replace(v, question="") for v in entry.variants)
    codes = {**default_snapshot.codes, "MISSING_PARAMETER": dataclasses.replace(entry, variants=silent)}
    hints = {k: v for k, v in default_snapshot.hints.items() if k != ("send_email", "to")}
    snapshot = dataclasses.replace(default_snapshot, codes=codes, hints=hints)
    rendered = render(snapshot, missing("send_email", "to"))
    assert rendered.text_source == TEXT_FROM_VARIANT
    assert rendered.text.startswith("Required input is missing: to.")


@pytest.mark.parametrize(
    ("hint_question", "source"), [("", TEXT_FROM_VARIANT_QUESTION), ("Question: Which?", TEXT_FROM_HINT_QUESTION)]
)
def test_a_hint_without_a_question_leaves_the_variants(default_snapshot, hint_question, source):
    hints = {**default_snapshot.hints, ("my_tool", "x"): HintEntry("my_tool", "x", question=hint_question)}
    snapshot = dataclasses.replace(default_snapshot, hints=hints)
    assert render(snapshot, missing("my_tool", "x")).text_source == source


def test_tool_texts_name_the_source_for_each_served_tools_parameter(default_snapshot):
    tools = (
        SampleTool("explain_error", (ParameterFault("code"),)),
        SampleTool("send_email", (ParameterFault("to"), ParameterFault("subject"))),
    )
    variant = default_snapshot.codes["MISSING_PARAMETER"].variant()
    texts = tool_texts(default_snapshot, "MISSING_PARAMETER", variant, tools, max_chars=500)
    by_call = {(t.tool, t.parameter): t for t in texts}
    # send_email, the guides' example, comes first.
    assert [(t.tool, t.parameter) for t in texts] == [
        ("send_email", "to"),
        ("send_email", "subject"),
        ("explain_error", "code"),
    ]
    assert by_call["send_email", "to"].from_hint and by_call["send_email", "to"].rendered.text == TO_QUESTION
    assert not by_call["explain_error", "code"].from_hint
    assert by_call["explain_error", "code"].words.startswith("this variant's question only")
    assert "replaces this variant's question" in by_call["send_email", "to"].words


def test_a_code_about_no_parameter_has_no_tool_rows(default_snapshot):
    variant = default_snapshot.codes["NOT_FOUND"].variant()
    tools = (SampleTool("send_email", (ParameterFault("to"),)),)
    assert tool_texts(default_snapshot, "NOT_FOUND", variant, tools, max_chars=500) == ()

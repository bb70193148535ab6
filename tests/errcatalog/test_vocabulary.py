"""One tool-name vocabulary everywhere: the registry, the safety screen, outcome events, ingest and the API agree.

Before, four regexes disagreed: ``3d_render`` or a 100-character name was a valid tool to the registry but
``[REDACTED]`` to the safety screen, and a call of a name outside every rule was never counted.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from django.core.exceptions import ValidationError
from hypothesis import given
from hypothesis import strategies as st

from errcatalog.catalog.models import identifier_problems
from errcatalog.outcomes.events import InvalidEvent, OutcomeEvent, from_wire
from errcatalog.safety import REDACTED, safe_identifier
from errcatalog.vocabulary import INVALID_TOOL_NAME, is_tool_name, recorded_tool_name
from mcpserver.registry import ToolRegistry, ToolSpec

# name -> is it a tool name (the MCP rule: 1-128 of A-Z a-z 0-9 _ - .)
NAMES = [
    ("get_weather", True),
    ("3d_render", True),
    ("weather.get_forecast", True),
    ("-leading-hyphen", True),
    (".hidden", True),
    ("a" * 128, True),
    ("A-Z.a_z-0.9", True),
    ("", False),
    ("a" * 129, False),
    ("get weather", False),
    ("server/tool", False),
    ("token:1", False),
    ("user@host", False),
    ("[REDACTED]", False),
    (INVALID_TOOL_NAME, False),
    ("ümlaut", False),
    ("get_weather\n", False),
    ("Ignore previous instructions", False),
    ("<b>x</b>", False),
]


def _registered(name: str) -> bool:
    registry = ToolRegistry()
    try:
        registry.add(ToolSpec(name=name, description="d", input_schema={"type": "object"}, function=lambda: None))
    except ValueError:
        return False
    return registry.get(name) is not None


def _shown(name: str) -> bool:
    shown = safe_identifier(name)
    assert shown in (name, REDACTED)
    return shown != REDACTED


def _ingested(name: str) -> bool:
    wire = {"id": uuid.uuid4().hex, "ts": time.time(), "tool": name, "outcome": "ok"}
    try:
        return from_wire(wire).tool == name
    except InvalidEvent:
        return False


def _accepted_by_api(name: str) -> bool:
    # The REST API, the admin and import refuse a hint's or rule's name by the catalog's one rule.
    return not identifier_problems(name) and bool(name)  # blank means "no value" to the API's optional name fields


def _accepted_in_a_token_scope(name: str) -> bool:
    from errcatalog.access.admin import ClientTokenForm

    form = ClientTokenForm()
    form.cleaned_data = {"tool_scope": [name]}
    try:
        form.clean_tool_scope()
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(("name", "valid"), NAMES)
def test_every_check_agrees_on_what_a_tool_name_is(name, valid):
    assert is_tool_name(name) is valid
    assert _registered(name) is valid
    assert _shown(name) is valid
    assert _accepted_by_api(name) is valid
    assert _accepted_in_a_token_scope(name) is valid
    assert recorded_tool_name(name) == (name if valid else INVALID_TOOL_NAME)
    # Ingest takes every name the pipeline can record: the name itself, or the placeholder.
    assert _ingested(recorded_tool_name(name))
    assert _ingested(name) is (valid or name == INVALID_TOOL_NAME)


def test_the_placeholder_cannot_be_a_tool():
    assert not _registered(INVALID_TOOL_NAME)
    assert safe_identifier(INVALID_TOOL_NAME) == REDACTED


@given(st.text(max_size=140))
def test_the_checks_agree_on_any_text(name):
    valid = is_tool_name(name)
    assert _shown(name) is valid
    assert _registered(name) is valid
    assert _ingested(recorded_tool_name(name))


# --- A call of a name outside the vocabulary is counted ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_calls_of_any_name_are_counted_through_ingest(settings, redis_url, short_lived_connections):
    from django.core.cache import cache

    from errcatalog.catalog.defaults import catalog_load_defaults
    from errcatalog.catalog.snapshot import catalog_changed
    from errcatalog.outcomes import ingest, recorder
    from errcatalog.outcomes.models import OutcomeRecord
    from mcpserver.auth import ClientIdentity
    from mcpserver.calls import ToolCall
    from mcpserver.pipeline import call_tool

    cache.clear()
    catalog_load_defaults(reset=False)
    catalog_changed()
    settings.REDIS_URL = redis_url
    settings.OUTCOMES = {
        **settings.OUTCOMES,
        "ENABLED": True,
        "STREAM_KEY": "errcatalog:outcomes:vocabulary-test",
        "FLUSH_INTERVAL_MS": 600_000,
    }
    recorder.reset()
    client = ClientIdentity(key="token:7", name="tests")
    called = ["3d_render", "Ignore previous instructions <b>", "x" * 200, "weather.get_forecast", "[REDACTED]"]

    async def calls():
        for name in called:
            call = ToolCall(name=name, arguments={}, client=client, session_id="s-1", protocol_version="2025-11-25")
            assert (await call_tool(call)).is_error

    asyncio.run(calls())
    assert recorder.flush(timeout=10) is True
    assert ingest.drain() == len(called)

    tools = sorted(OutcomeRecord.objects.values_list("tool", flat=True))
    assert tools == sorted(["3d_render", "weather.get_forecast", *[INVALID_TOOL_NAME] * 3])
    assert set(OutcomeRecord.objects.values_list("code", flat=True)) == {"FUNCTION_NOT_FOUND"}
    recorder.reset()


def test_an_outcome_event_for_the_placeholder_round_trips():
    event = OutcomeEvent(tool=INVALID_TOOL_NAME, outcome="error", code="FUNCTION_NOT_FOUND")

    assert from_wire(event.to_wire()).tool == INVALID_TOOL_NAME

"""Outcomes record the locale served: MCP call → recorder → Redis stream → ingest → the event row."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from django.core.cache import cache

from errcatalog.catalog.defaults import catalog_load_defaults
from errcatalog.catalog.snapshot import catalog_changed
from errcatalog.outcomes import ingest, recorder
from errcatalog.outcomes.events import OutcomeEvent, from_wire
from errcatalog.outcomes.models import OutcomeRecord
from mcpserver.auth import ClientIdentity
from mcpserver.calls import ToolCall
from mcpserver.pipeline import call_tool
from mcpserver.registry import autodiscover

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def recording(settings, redis_url):
    from django.db import connection

    autodiscover()
    recorder.reset()
    settings.REDIS_URL = redis_url
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": True, "FLUSH_INTERVAL_MS": 600_000}
    settings.MCP = {**settings.MCP, "TOOLSETS": frozenset({"catalog"})}
    cache.clear()
    catalog_load_defaults(reset=False)
    catalog_changed()
    max_age = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = 0  # tool threads close theirs; the test database can be dropped
    yield
    connection.settings_dict["CONN_MAX_AGE"] = max_age
    recorder.reset()


def test_the_locale_served_is_recorded_through_real_ingest(recording):
    client = ClientIdentity(key="token:3", name="agent")

    async def calls() -> list[str]:
        texts = []
        for session, locales in (("s-de", ("de-ch", "de", "en")), ("s-en", ("en",)), ("s-none", ())):
            call = ToolCall("explain_error", {}, client, session_id=session, protocol_version="2026-07-28")
            call.locales = locales
            texts.append((await call_tool(call)).content[0].text)
        return texts

    texts = asyncio.run(calls())
    assert texts[0].startswith("Frage: ") and texts[1].startswith("Question: ") and texts[2].startswith("Question: ")
    assert recorder.flush(timeout=10)
    assert ingest.drain() == 3
    rows = dict(OutcomeRecord.objects.values_list("session", "locale"))
    assert rows == {"s-de": "de", "s-en": "", "s-none": ""}
    assert set(OutcomeRecord.objects.values_list("code", flat=True)) == {"MISSING_PARAMETER"}


def test_the_locale_travels_on_the_wire():
    event = OutcomeEvent(tool="send_email", outcome="error", code="MISSING_PARAMETER", variant="default", locale="de")
    assert event.to_wire()["locale"] == "de"
    assert from_wire(event.to_wire()).locale == "de"
    assert "locale" not in OutcomeEvent(tool="send_email", outcome="ok").to_wire()


def test_an_event_from_before_locales_still_ingests():
    wire = {"id": uuid.uuid4().hex, "ts": time.time() - 1, "tool": "search", "outcome": "error", "code": "E_X"}
    assert ingest.ingest_wire_batch([wire]) == 1
    assert OutcomeRecord.objects.get().locale == ""


def test_a_locale_too_long_for_its_column_is_dropped_not_fatal_to_the_batch():
    good = OutcomeEvent(tool="search", outcome="error", code="E_X", locale="pt-BR", ts=time.time() - 1)
    long = OutcomeEvent(tool="search", outcome="error", code="E_X", locale="x" * 17, ts=time.time() - 1)
    assert ingest.ingest_events([good, long]) == 1
    assert OutcomeRecord.objects.get().locale == "pt-BR"

"""A failure that repeats reuses its validated tool result (and its wire form, ``test_wire``); one with a Sentry
event ID never does."""

from __future__ import annotations

import mcp_types as types
import pytest

from errcatalog.render import Failure, ParameterFault, render
from mcpserver import pipeline


def _rendered(snapshot, **extra):
    failure = Failure("MISSING_PARAMETER", tool_name="send_email", parameters=(ParameterFault("to"),), **extra)
    return render(snapshot, failure, pick=0.0)


def test_the_same_render_gives_the_same_result(default_snapshot):
    rendered = _rendered(default_snapshot)
    first = pipeline._result_of(rendered, "markdown")
    assert pipeline._result_of(rendered, "markdown") is first
    assert first.is_error is True
    assert first.content[0].text == rendered.text


def test_each_format_has_its_own_result(default_snapshot):
    rendered = _rendered(default_snapshot)
    markdown, json_only = pipeline._result_of(rendered, "markdown"), pipeline._result_of(rendered, "json")
    assert markdown is not json_only
    assert len(markdown.content) == len(json_only.content) == 1
    assert markdown.content[0].text != json_only.content[0].text


def test_results_with_an_event_id_are_built_each_time(default_snapshot):
    failure = Failure("SERVER_ERROR", tool_name="send_email", event_id="0123456789abcdef0123456789abcdef")
    rendered = render(default_snapshot, failure, pick=0.0)
    first = pipeline._result_of(rendered, "markdown")
    assert "Event ID: 0123456789abcdef0123456789abcdef" in first.content[0].text
    assert pipeline._result_of(rendered, "markdown") is not first
    assert len(pipeline._results) == 0


def test_the_cache_is_bounded(default_snapshot, monkeypatch):
    monkeypatch.setattr(pipeline._results, "max_entries", 2)
    renders = [_rendered(default_snapshot, alternatives=(f"tool_{i}",)) for i in range(3)]
    for rendered in renders:
        pipeline._result_of(rendered, "markdown")
    assert len(pipeline._results) <= 2


@pytest.mark.django_db(transaction=True)
def test_a_repeated_failure_reaches_each_generation_as_a_new_one_would(mcp):
    async def scenario(client):
        answers = [await client.call_tool("send_email", {"subject": "Lunch", "body": "Noon?"}) for _ in range(3)]
        return [answer.model_dump(by_alias=True, exclude_none=True) for answer in answers]

    answers = mcp.run(scenario)
    for version, dumps in answers.items():
        assert dumps[0] == dumps[1] == dumps[2], version
        assert dumps[0]["structuredContent"]["code"] == "MISSING_PARAMETER"
    assert answers["2026-07-28"][0]["_meta"] == {types.SERVER_INFO_META_KEY: {"name": "errcatalog", "version": "1"}}
    assert "_meta" not in answers["2025-11-25"][0]

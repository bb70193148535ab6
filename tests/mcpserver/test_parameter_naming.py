"""Which of an upstream tool's parameters its failure is about (``mcpserver.pipeline._parameters_named``): always a
name from the tool's schema, chosen by what the failure's text says. Pure: no servers, no database."""

from __future__ import annotations

from typing import Any

import pytest

from errcatalog.render.classify import classification, facts_from_exception
from errcatalog.render.entries import CatalogSnapshot
from errcatalog.render.patterns import captured_facts
from mcpserver.gateway.failures import UpstreamToolError
from mcpserver.pipeline import _parameters_named
from mcpserver.registry import ToolSpec

STRING, INTEGER = {"type": "string"}, {"type": "integer"}


def _spec(**properties: Any) -> ToolSpec:
    schema = {"type": "object", "properties": properties}
    return ToolSpec(name="up__t", description="d", input_schema=schema, function=lambda **kw: None, upstream="up")


def _named(snapshot: CatalogSnapshot, spec: ToolSpec, text: str, arguments: dict[str, Any]) -> list[str]:
    """As the pipeline names them: classified by the default rules, the rule's captures and matched words used."""
    facts = facts_from_exception(UpstreamToolError("up", text, tool="t"), upstream="up", tool="up__t")
    code, rule, matched = classification(snapshot, facts)
    captured = captured_facts(rule.pattern, matched) if rule else ()
    entry = snapshot.codes[code]
    return [fault.name for fault in _parameters_named(spec, facts.text, entry, arguments, captured, matched)]


@pytest.mark.parametrize(
    ("properties", "text", "arguments", "named"),
    [
        # A value the text quotes back says more than a property's name met in its prose.
        ({"time": STRING, "sourceTimezone": STRING, "targetTimezone": STRING},
         "Invalid time zone specified: Europe/Londn", {"time": "10:00", "targetTimezone": "Europe/Londn"},
         ["targetTimezone"]),
        # The path a rule captured, matched regardless of case when the schema has it once.
        ({"query": STRING, "region": STRING, "max_results": INTEGER}, "Query must be a non-empty string",
         {"query": ""}, ["query"]),
        ({"query": STRING, "max_results": INTEGER}, "max_results must be a positive integer",
         {"query": "x", "max_results": 0}, ["max_results"]),
        # The path of a validation issue inside a JSON error body (zod's keys, valibot's objects with their key).
        ({"url": STRING, "format": STRING, "raw": {"type": "boolean"}},
         'Invalid arguments: [{"code": "custom", "message": "Only http/https URLs are allowed", "path": ["url"]}]',
         {"url": "file:///etc/passwd"}, ["url"]),
        ({"query": STRING, "limit": INTEGER},
         'Invalid arguments for tool search_nodes: [{"kind": "validation", "message": "Invalid value: Expected <=50 '
         'but received 500", "path": [{"type": "object", "key": "limit", "value": 500}]}]',
         {"query": "tea", "limit": 500}, ["limit"]),
        # A name the schema does not have is never named, whatever the text says.
        ({"query": STRING, "limit": INTEGER, "offset": INTEGER}, "ignore_previous must be a positive integer",
         {"query": "x"}, []),
    ],
)  # fmt: skip
def test_the_parameter_named_is_the_one_the_text_is_about(default_snapshot, properties, text, arguments, named):
    assert _named(default_snapshot, _spec(**properties), text, arguments) == named

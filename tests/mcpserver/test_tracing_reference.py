"""docs/reference/tracing.md documents every attribute the tool-call span and the SDK's message span carry: those a
real call over HTTP puts on them, and every attribute ``mcpserver/tracing.py`` can set (an upstream's too)."""

from __future__ import annotations

import ast
import re

import pytest

from tests.docs.reference_pages import REFERENCE_DIR, REPO_ROOT
from tests.mcpserver.test_tracing import spans  # noqa: F401 (a fixture)

PAGE = REFERENCE_DIR / "tracing.md"


def documented(section: str) -> set[str]:
    """The attributes listed in the table under the heading that starts with ``section``."""
    text = PAGE.read_text(encoding="utf-8")
    part = text.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_.]+)` \|", part, flags=re.MULTILINE))


def set_in_code() -> set[str]:
    """Every dotted attribute name written as a string in mcpserver/tracing.py."""
    tree = ast.parse((REPO_ROOT / "mcpserver" / "tracing.py").read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", node.value)
        and not node.value.startswith("errcatalog.mcpserver")  # the tracer's name
    }


def test_every_attribute_the_tool_call_span_can_carry_is_documented():
    assert set_in_code() == documented("Attributes of a tool call")


@pytest.mark.django_db(transaction=True)
def test_every_attribute_a_real_call_puts_on_the_spans_is_documented(mcp, spans):  # noqa: F811
    async def scenario(client):
        await client.call_tool("explain_error", {"code": "TIMEOUT"})
        await client.call_tool("send_email", {"subject": "Lunch", "body": "Noon?"})
        await client.call_tool("no_such_tool", {})

    mcp.run(scenario)
    ours = [span for span in spans if span.name.startswith("execute_tool")]
    messages = [span for span in spans if span.name.startswith("tools/call")]
    assert ours and messages
    assert {key for span in ours for key in span.attributes} <= documented("Attributes of a tool call")
    assert {key for span in messages for key in span.attributes} <= documented("Attributes of an MCP message")

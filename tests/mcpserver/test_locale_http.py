"""The MCP client's Accept-Language chooses the catalog locale, over real HTTP with the SDK's client.

The protocol itself carries no client locale (neither generation's initialize, clientInfo nor ``_meta`` has one in
mcp 2.3), so the HTTP header of the MCP request is what the server reads.
"""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.django_db(transaction=True)

WITHOUT_RECIPIENT = {"subject": "Lunch", "body": "Noon at the usual place?"}
GERMAN_QUESTION = "Frage: Welchen Wert soll ich für to verwenden? Bitte geben Sie die fehlenden Angaben an."
ENGLISH_QUESTION = "Question: Who should I send this email to? Please provide the recipient email address."


def ask_without_recipient(mcp, accept_language: str | None) -> dict[str, tuple[str, dict]]:
    """send_email without ``to``, in both protocol generations: {protocol: (text, structured content)}."""

    async def both() -> dict[str, tuple[str, dict]]:
        headers = {"Authorization": f"Bearer {mcp.key}"}
        if accept_language is not None:
            headers["Accept-Language"] = accept_language
        answers = {}
        for mode in ("auto", "legacy"):
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20)) as http,
                Client(streamable_http_client(mcp.url, http_client=http), mode=mode) as client,
            ):
                result = await client.call_tool("send_email", WITHOUT_RECIPIENT)
                assert result.is_error
                answers[client.protocol_version] = (result.content[0].text, result.structured_content)
        return answers

    return asyncio.run(both())


def test_a_german_client_is_asked_in_german(mcp):
    answers = ask_without_recipient(mcp, "de-CH;q=0.9, de;q=0.8, en;q=0.5")
    assert set(answers) == {"2026-07-28", "2025-11-25"}
    for text, structured in answers.values():
        assert text == GERMAN_QUESTION
        assert structured["kind"] == "needsInput:v1"
        assert structured["details"]["required_parameter"] == "to"


@pytest.mark.parametrize("accept_language", [None, "en-GB, en;q=0.9", "ja", "*", "de;q=0", "de;q=x;;,<b>"])
def test_other_clients_get_the_catalog_default(mcp, accept_language):
    for text, _ in ask_without_recipient(mcp, accept_language).values():
        assert text == ENGLISH_QUESTION

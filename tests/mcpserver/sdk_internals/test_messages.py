"""Each sentence of ``mcpserver.sdk_internals.messages`` is still written by the SDK, as the table has it."""

from __future__ import annotations

import pytest
from mcp.shared.inbound import MCP_NAME_HEADER, NAME_BEARING_METHODS

from mcpserver.sdk_internals.messages import (
    SDK_CLIENT_SESSION_TERMINATED,
    SDK_CLIENT_UNREADABLE_ANSWER,
    SDK_FIXED_DATA,
    SDK_FIXED_MESSAGES,
)
from tests.mcpserver.sdk_internals.support import SDK_SOURCE, revisit, sdk_source

# Sentences the SDK builds from constants: the template in its source, and the constants' values.
TEMPLATES = {
    "mcp-name header does not match the request body's 'name' parameter": (
        "shared/inbound.py",
        "{MCP_NAME_HEADER} header does not match the request body's {name_key!r} parameter",
    ),
}


def _all_source() -> str:
    return "\n".join(path.read_text() for path in SDK_SOURCE.rglob("*.py"))


@pytest.mark.parametrize("message", sorted(SDK_FIXED_MESSAGES))
def test_each_fixed_sentence_is_in_the_sdks_source(message):
    if message in TEMPLATES:
        path, template = TEMPLATES[message]
        assert template in sdk_source(path), revisit("messages", f"{path} no longer builds {message!r}")
        return
    source = _all_source()
    assert f'"{message}"' in source or f"'{message}'" in source, revisit(
        "messages", f"the SDK no longer sends {message!r} as it is (SDK_FIXED_MESSAGES)"
    )


def test_the_templated_sentence_names_the_header_and_parameter_we_expect():
    assert (MCP_NAME_HEADER.lower(), NAME_BEARING_METHODS["tools/call"]) == ("mcp-name", "name"), revisit(
        "messages", "the Mcp-Name mismatch sentence is built from other values"
    )


def test_the_fixed_data_is_the_sdks():
    for message, data in SDK_FIXED_DATA.items():
        source = _all_source()
        assert f'"{message}"' in source, revisit("messages", f"{message!r} is gone")
        for value in data.values():
            assert f'"{value}"' in source, revisit("messages", f"the data of {message!r} no longer carries {value!r}")


@pytest.mark.parametrize("prefix", SDK_CLIENT_UNREADABLE_ANSWER)
def test_the_sdks_client_still_words_an_unreadable_answer_so(prefix):
    assert f'message=f"{prefix}: ' in sdk_source("client/streamable_http.py"), revisit(
        "messages", f"the SDK's client no longer reports an unreadable answer as {prefix!r}… (the gateway's failures)"
    )


def test_the_sdks_client_still_words_a_lost_session_so():
    assert f'message="{SDK_CLIENT_SESSION_TERMINATED}"' in sdk_source("client/streamable_http.py"), revisit(
        "messages", "the SDK's client no longer reports a session the server forgot as SESSION_GONE says"
    )

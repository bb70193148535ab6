"""What an upstream's sampling and roots requests become before they reach a client: named, cut, redacted, refused
when they cannot be relayed, and answered with the spec's error when nobody can answer. No server: the relays'
functions with a stand-in for the call's client."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest

from mcpserver.gateway.elicitation import checked_url_elicitation, url_relayable
from mcpserver.gateway.roots import MAX_ROOTS, relay_roots
from mcpserver.gateway.sampling import (
    MAX_MESSAGES,
    MEDIA_MAX_CHARS,
    MESSAGE_TEXT_MAX_CHARS,
    UPSTREAM_META_KEY,
    Refused,
    bounded_request,
    relay_sampling,
)
from mcpserver.registry import ClientCannotAnswer
from tests.mcpserver.gateway.upstream_server import HOSTILE, SECRET

ANSWER = types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="ok"), model="m")


class Client:
    """The call's client: records what it is asked, answers or cannot."""

    def __init__(self, *, can: bool = True, roots: int = 1) -> None:
        self.can = can
        self.asked: list[types.CreateMessageRequestParams] = []
        self.roots = roots

    async def create_message(self, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        if not self.can:
            raise ClientCannotAnswer("no sampling")
        self.asked.append(params)
        return ANSWER

    async def list_roots(self) -> types.ListRootsResult:
        if not self.can:
            raise ClientCannotAnswer("no roots")
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///r/{n}") for n in range(self.roots)])

    async def elicit_url(self, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        raise ClientCannotAnswer("no URL elicitation")


def _request(*messages: types.SamplingMessage, **fields) -> types.CreateMessageRequestParams:
    return types.CreateMessageRequestParams(messages=list(messages), max_tokens=100, **fields)


def _text(text: str) -> types.SamplingMessage:
    return types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))


def test_hostile_text_is_cut_and_redacted_and_the_upstream_named():
    params = _request(
        _text(HOSTILE),
        system_prompt=f"Be helpful. token={SECRET}",
        stop_sequences=[f"stop {SECRET}"] * 20,
        include_context="allServers",
        metadata={"provider": "anything"},
    )
    relayed = bounded_request(params, "github", secrets=())
    text = relayed.messages[0].content.text
    assert len(text) <= MESSAGE_TEXT_MAX_CHARS and SECRET not in text and "hunter2" not in text
    assert relayed.system_prompt.startswith('The MCP server "github"') and SECRET not in relayed.system_prompt
    assert len(relayed.stop_sequences) == 8 and not any(SECRET in s for s in relayed.stop_sequences)
    assert relayed.meta[UPSTREAM_META_KEY] == "github"
    # What reaches beyond the call is dropped: other servers' context, the provider's metadata.
    assert relayed.include_context is None and relayed.metadata is None
    assert relayed.max_tokens == 100


def test_a_value_the_gateway_sent_the_upstream_is_redacted_wherever_it_appears():
    relayed = bounded_request(_request(_text("the key is opensesame-42")), "git", secrets=("opensesame-42",))
    assert "opensesame-42" not in relayed.messages[0].content.text


@pytest.mark.parametrize(
    "params",
    [
        pytest.param(_request(*[_text("x")] * (MAX_MESSAGES + 1)), id="too many messages"),
        pytest.param(_request(), id="no messages"),
        pytest.param(_request(*[_text("plain words " * 2000)] * 6), id="too much text"),
        pytest.param(
            _request(
                types.SamplingMessage(
                    role="user",
                    content=types.ImageContent(type="image", data="A" * (MEDIA_MAX_CHARS + 4), mime_type="image/png"),
                )
            ),
            id="too much media",
        ),
        pytest.param(_request(_text("x"), tools=[types.Tool(name="t", input_schema={"type": "object"})]), id="tools"),
        pytest.param(
            _request(
                types.SamplingMessage(
                    role="assistant", content=types.ToolUseContent(type="tool_use", id="1", name="t", input={})
                )
            ),
            id="tool use",
        ),
    ],
)
def test_a_request_beyond_the_bounds_is_refused(params):
    with pytest.raises(Refused):
        bounded_request(params, "github", secrets=())


def _run(coroutine_function, *args):
    return anyio.run(coroutine_function, *args)


def test_the_calls_client_answers_and_its_answer_goes_back_unchanged():
    client = Client()
    assert _run(relay_sampling, _request(_text("hi")), client, "github", ()) is ANSWER
    assert client.asked[0].messages[0].content.text == "hi"


def test_without_a_client_that_can_answer_the_upstream_hears_method_not_found():
    async def relay(client):
        return await relay_sampling(_request(_text("hi")), client, "github", ())

    assert _run(relay, None).code == types.METHOD_NOT_FOUND  # no call it can be told to belong to
    assert _run(relay, Client(can=False)).code == types.METHOD_NOT_FOUND


def test_an_oversized_request_is_answered_invalid_params_and_never_reaches_the_client():
    client = Client()
    error = _run(relay_sampling, _request(*[_text("x")] * (MAX_MESSAGES + 1)), client, "github", ())
    assert error.code == types.INVALID_PARAMS and not client.asked


def test_roots_are_the_calling_clients_cut_to_the_bound_and_nobodys_outside_a_call():
    assert len(_run(relay_roots, Client(roots=MAX_ROOTS + 5)).roots) == MAX_ROOTS
    assert _run(relay_roots, None).code == types.METHOD_NOT_FOUND
    assert _run(relay_roots, Client(can=False)).code == types.METHOD_NOT_FOUND


@pytest.mark.parametrize(
    ("url", "debug", "relayed"),
    [
        ("https://auth.example.com/authorize?x=1", False, True),
        ("http://auth.example.com/authorize", True, False),  # http only to loopback, only in development
        ("http://127.0.0.1:8765/callback", True, True),
        ("http://localhost:8765/callback", True, True),
        ("http://[::1]:8765/callback", True, True),
        ("http://127.0.0.1:8765/callback", False, False),
        ("ftp://auth.example.com/", False, False),
        ("https://user:pw@auth.example.com/", False, False),
        ("https://auth.example.com/\x00", False, False),
        ("https://auth.example.com\\@evil.example/", False, False),
        ("https://" + "a" * 2000 + ".example.com/", False, False),
    ],
)
def test_only_https_urls_reach_the_user_or_http_to_loopback_in_development(settings, url, debug, relayed):
    settings.DEBUG = debug
    assert url_relayable(url) is relayed


def test_a_url_carrying_a_value_the_gateway_sent_the_upstream_is_not_relayed():
    params = types.ElicitRequestURLParams(
        message="Sign in", url="https://a.example/?k=opensesame-42", elicitation_id="1"
    )
    assert checked_url_elicitation(params, ("opensesame-42",)) is None
    hostile = types.ElicitRequestURLParams(message=HOSTILE, url="https://a.example/", elicitation_id="1")
    checked = checked_url_elicitation(hostile, ())
    assert checked is not None and len(checked.message) <= 1000 and SECRET not in checked.message

"""Catalog changes reach the clients that listed: 2026-07-28 listen streams and 2025-11-25 sessions, over real
HTTP with the SDK's client, within a token's scope and its cap of streams. (Tool list changes, which come from
upstreams, are tested with the gateway: tests/mcpserver/gateway/test_gateway_calls.py.)"""

from __future__ import annotations

import asyncio

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create, key_hash
from errcatalog.catalog.models import ErrorCode
from errcatalog.catalog.services import error_code_create, template_variant_update
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # A 2025-11-25 session subscribes the way that generation does; the SDK's client warns it is gone in 2026.
    pytest.mark.filterwarnings("ignore:resources/subscribe is removed"),
]

# Long enough for a loaded CI machine; every wait ends as soon as what it waits for has arrived.
WAIT_SECONDS = 20
RATE_LIMIT_URI = "errcatalog://codes/RATE_LIMIT"


def _add_interactive_code() -> None:
    error_code_create(
        code="NEEDS_CITY",
        category="user_input",
        kind="needs_input",
        explanation="A weather tool needs to know which city.",
        variants=[
            {
                "name": "default",
                "header": "Input Error",
                "message": "The city is missing.",
                "instruction": "Ask the user which city they mean, then call the tool again.",
                "question": "Question: Which city do you mean? Please name it.",
            }
        ],
    )


def _reword_rate_limit(attempt: int = 0) -> None:
    variant = ErrorCode.objects.get(code="RATE_LIMIT").variants.get(name="default", locale="")
    template_variant_update(variant=variant, instruction=f"Wait as long as the error says, then retry ({attempt}).")


def _application():
    import config.asgi

    return config.asgi.application.mcp


async def _events(subscription, wanted: int) -> list:
    got = []
    with anyio.fail_after(WAIT_SECONDS):
        async for event in subscription:
            got.append(event)
            if len(got) >= wanted:
                break
    return got


def test_a_listen_stream_hears_of_new_codes_and_of_each_subscribed_codes_change(mcp):
    async def scenario():
        async with mcp.client() as client:
            assert client.protocol_version == "2026-07-28"
            await client.list_resources()  # what a client listens for changes of
            async with client.listen(
                resources_list_changed=True, prompts_list_changed=True, resource_subscriptions=[RATE_LIMIT_URI]
            ) as subscription:
                await asyncio.to_thread(_add_interactive_code)
                added = await _events(subscription, 2)
                await asyncio.to_thread(_reword_rate_limit)
                reworded = await _events(subscription, 1)
            prompts = [p.name for p in (await client.list_prompts()).prompts]
        return added, reworded, prompts

    added, reworded, prompts = asyncio.run(scenario())
    assert set(added) == {ResourcesListChanged(), PromptsListChanged()}
    assert reworded == [ResourceUpdated(uri=RATE_LIMIT_URI)]
    assert "NEEDS_CITY" in prompts  # what the client lists again is the new catalog


def test_a_2025_session_hears_on_its_stream_and_only_of_what_it_subscribed_to(mcp):
    heard: list = []

    async def handler(message) -> None:
        if hasattr(message, "method"):
            heard.append(message)

    async def scenario():
        async with mcp.client(mode="legacy", message_handler=handler) as client:
            assert client.protocol_version == "2025-11-25"
            await client.list_resources()
            await client.subscribe_resource(RATE_LIMIT_URI)
            # The client opens its standalone stream (GET) on its own after the handshake, and what is sent before
            # it is open is not kept: change the code until the session hears of it.
            await _until(_reword_rate_limit, lambda: RATE_LIMIT_URI in _updated(heard))
            await asyncio.to_thread(_add_interactive_code)
            await _wait_for(lambda: set(_methods(heard)) >= _LIST_CHANGES)

    asyncio.run(scenario())
    # Only the subscribed code was announced as updated, though the new code changed the lists.
    assert set(_updated(heard)) == {RATE_LIMIT_URI}


_LIST_CHANGES = {"notifications/resources/list_changed", "notifications/prompts/list_changed"}


async def _until(change, condition) -> None:
    """Make ``change`` (in a thread: it writes the catalog) until ``condition`` holds."""
    with anyio.fail_after(WAIT_SECONDS):
        for attempt in range(100):
            await asyncio.to_thread(change, attempt)
            with anyio.move_on_after(1):
                while not condition():
                    await anyio.sleep(0.05)
            if condition():
                return


def _methods(heard: list) -> list[str]:
    return [m.method for m in heard]


def _updated(heard: list) -> list[str]:
    return [m.params.uri for m in heard if m.method == "notifications/resources/updated"]


async def _wait_for(condition) -> None:
    with anyio.fail_after(WAIT_SECONDS):
        while not condition():
            await anyio.sleep(0.05)


def test_a_token_that_may_not_read_the_catalog_hears_nothing_of_it(mcp, token_owner):
    blind = client_token_create(user=token_owner, name="blind", can_read_catalog=False)[1]
    blind_heard: list = []

    async def blind_handler(message) -> None:
        if hasattr(message, "method"):
            blind_heard.append(message.method)

    async def scenario():
        async with (
            mcp.client() as reader,
            mcp.client(key=blind) as client,
            mcp.client(mode="legacy", key=blind, message_handler=blind_handler) as session,
        ):
            await reader.list_resources()
            await session.list_resources()
            async with (
                reader.listen(resources_list_changed=True) as control,
                client.listen(resources_list_changed=True, prompts_list_changed=True, tools_list_changed=True) as sub,
            ):
                honored = sub.honored
                await asyncio.to_thread(_add_interactive_code)
                # The reading token heard it: by then the blind one would have too.
                assert await _events(control, 1) == [ResourcesListChanged()]
                await anyio.sleep(0.2)
            with pytest.raises(MCPError) as refused:
                await session.subscribe_resource(RATE_LIMIT_URI)
            assert refused.value.error.code == -31403
        return honored

    honored = asyncio.run(scenario())
    assert honored.tools_list_changed is True
    assert honored.resources_list_changed is None and honored.prompts_list_changed is None
    assert not [m for m in blind_heard if "resources" in m or "prompts" in m]


def test_a_token_may_hold_only_its_cap_of_listen_streams(mcp, settings):
    settings.MCP = {**settings.MCP, "MAX_SESSIONS_PER_TOKEN": 2}
    feed = _application().feed
    token = f"token:{ClientToken.objects.get(key_hash=key_hash(mcp.key)).pk}"

    async def scenario():
        async with mcp.client() as client:
            async with client.listen(tools_list_changed=True), client.listen(tools_list_changed=True):
                with pytest.raises(MCPError) as refused:
                    async with client.listen(tools_list_changed=True):
                        pass
                held = feed.listen_streams(token)
            # A stream closed frees its place.
            await _wait_for(lambda: feed.listen_streams(token) == 0)
            async with client.listen(tools_list_changed=True) as again:
                return refused.value, held, again.honored

    refused, held, honored = asyncio.run(scenario())
    assert refused.error.code == -31429
    assert "at most 2 may be open at once" in refused.error.message
    assert held == 2
    assert honored.tools_list_changed is True


def test_an_ended_session_is_forgotten(mcp):
    feed = _application().feed
    before = feed.sessions()

    async def scenario():
        async with mcp.client(mode="legacy") as client:
            await client.list_tools()
            return feed.sessions()

    during = asyncio.run(scenario())
    assert during == before + 1
    # The client deleted its session on the way out; its connection's exit stack forgot it.
    wait_until(lambda: feed.sessions() == before, seconds=WAIT_SECONDS, what="the session forgotten")

"""Missing input asked for with a real elicitation: 2025-11-25 on the session, 2026-07-28 as a round trip."""

from __future__ import annotations

import mcp_types as types
import pytest

pytestmark = pytest.mark.django_db(transaction=True)


class Answers:
    """An elicitation callback that answers with a fixed action and records what it was asked."""

    def __init__(self, action: str, content: dict | None = None) -> None:
        self.action = action
        self.content = content
        self.asked: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context, params):
        self.asked.append(params)
        return types.ElicitResult(action=self.action, content=self.content if self.action == "accept" else None)


def book(client):
    return client.call_tool("book_table", {"guest": "Ada"})


def test_accepted_elicitation_completes_the_call(mcp):
    answers = Answers("accept", {"email": "ada@example.com", "people": 4})
    results = mcp.run(book, elicitation_callback=answers)
    assert set(results) == {"2026-07-28", "2025-11-25"}
    for result in results.values():
        assert not result.is_error
        assert result.structured_content == {"booked": True, "guest": "Ada", "email": "ada@example.com", "people": 4}
    asked = answers.asked[0]
    assert asked.message.startswith("Question: ") and "email and people" in asked.message
    assert asked.requested_schema["required"] == ["email", "people"]
    assert asked.requested_schema["properties"]["email"]["format"] == "email"
    assert asked.requested_schema["properties"]["people"] == {
        "type": "integer",
        "description": "How many people",
        "minimum": 1,
        "maximum": 12,
    }
    assert len(answers.asked) == 2  # once per generation


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_declined_or_cancelled_elicitation_returns_the_question(mcp, action):
    results = mcp.run(book, elicitation_callback=Answers(action))
    for result in results.values():
        assert result.is_error
        assert result.structured_content["code"] == "MISSING_PARAMETER"
        assert result.structured_content["kind"] == "needsInput:v1"


def test_accepted_but_invalid_answer_becomes_invalid_parameter(mcp):
    results = mcp.run(book, elicitation_callback=Answers("accept", {"email": "nope-99", "people": 4}))
    for result in results.values():
        assert result.structured_content["code"] == "INVALID_PARAMETER"
        assert "nope-99" not in result.content[0].text


def test_client_without_elicitation_gets_the_question_not_an_error(mcp):
    results = mcp.run(book)
    for result in results.values():
        assert result.is_error
        assert result.structured_content["code"] == "MISSING_PARAMETER"
        assert result.content[0].text.startswith("Question: ")


def test_secrets_are_never_elicited(mcp):
    answers = Answers("accept", {"password": "hunter2"})
    results = mcp.run(lambda client: client.call_tool("service_login", {"user": "ada"}), elicitation_callback=answers)
    assert answers.asked == []
    for result in results.values():
        assert result.structured_content["code"] == "MISSING_PARAMETER"
        assert result.structured_content["details"]["required_parameter"] == "password"


def test_2026_round_trip_state_is_sealed(mcp):
    """The first answer is an InputRequiredResult whose requestState the client cannot read or forge."""

    async def scenario(client):
        first = await client.session.call_tool("book_table", {"guest": "Ada"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state.startswith("v1.") and "email" not in first.request_state
        forged = first.request_state[:-4] + "AAAA"
        response = {"errcatalog_missing_input": types.ElicitResult(action="accept", content={"email": "a@b.co"})}
        with pytest.raises(Exception, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "book_table", {"guest": "Ada"}, input_responses=response, request_state=forged
            )
        return first

    async def only_modern():
        async with mcp.client(mode="auto", elicitation_callback=Answers("cancel")) as client:
            assert client.protocol_version == "2026-07-28"
            return await scenario(client)

    import asyncio

    asyncio.run(only_modern())


# Sampling on a 2025-11-25 session: the SDK warns that the feature is deprecated as of 2026-07-28.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_missing_input_then_the_tools_own_sampling_in_one_call(mcp):
    # On 2026-07-28 both are round trips of the one call: the question's answer is carried while the tool asks its
    # client's model in the next round (mcpserver.elicitation.carrying, mcpserver.tool_rounds).
    prompts = []

    async def sample(context, params: types.CreateMessageRequestParams):
        prompts.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Welcome, Ada!"), model="m"
        )

    answers = Answers("accept", {"guest": "Ada"})
    results = mcp.run(
        lambda client: client.call_tool("greet_guest", {}), elicitation_callback=answers, sampling_callback=sample
    )
    for result in results.values():
        assert not result.is_error, result
        assert result.content[0].text == "Welcome, Ada!"
    assert prompts == ["Greet Ada", "Greet Ada"]  # once per generation
    assert len(answers.asked) == 2

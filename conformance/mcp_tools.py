"""The ``conformance`` toolset: the fixtures of the official MCP conformance suite (never on by default).

``@modelcontextprotocol/conformance`` (server scenarios, ``--suite all``; ``./dev conformance``) calls tools,
reads resources and gets prompts with fixed names and checks their exact payloads; the scenario descriptions
of the suite's version 0.1.16 are the specification of everything below. Switch it on with
``ERRCATALOG_MCP_TOOLSETS=...,conformance``: then the server also serves the resources, prompts, completions and
``logging/setLevel`` defined here (through ``conformance.mcp_extensions``), which errcatalog has no other use for.

This module holds plain data and plain functions; the SDK types are built from them in ``mcp_extensions``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from typing import Any

from errcatalog.errors import ErrcatalogError
from mcpserver.registry import ToolContext, ToolOutput, tool

TOOLSET = "conformance"
NO_ARGUMENTS: Mapping[str, Any] = {"type": "object", "properties": {}}

# A 1x1 PNG and a WAV file with a single silent sample: the smallest valid media the scenarios ask for.
IMAGE_PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO_WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
# The scenarios expect a few notifications "~50 ms" apart, so that a client sees them arrive during the call.
STEP_SECONDS = 0.05
# test_reconnection waits this long after closing its stream, so that its last log message and its result are sent
# while the client is away: they reach it when it reconnects, replayed (mcpserver.streams).
RECONNECT_WAIT_SECONDS = 0.2


class IntentionalFailure(ErrcatalogError):
    """What ``test_error_handling`` raises: a refused request, rendered from the catalog like any other."""

    code = "CLIENT_ERROR"


def _image() -> dict[str, Any]:
    return {"type": "image", "data": IMAGE_PNG_BASE64, "mimeType": "image/png"}


# --- Tools ---------------------------------------------------------------------------------------------------


@tool(toolset=TOOLSET, description="Conformance fixture: returns one text block.", input_schema=NO_ARGUMENTS)
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@tool(toolset=TOOLSET, description="Conformance fixture: returns a PNG image block.", input_schema=NO_ARGUMENTS)
def test_image_content() -> ToolOutput:
    return ToolOutput(content=[_image()])


@tool(toolset=TOOLSET, description="Conformance fixture: returns a WAV audio block.", input_schema=NO_ARGUMENTS)
def test_audio_content() -> ToolOutput:
    return ToolOutput(content=[{"type": "audio", "data": AUDIO_WAV_BASE64, "mimeType": "audio/wav"}])


@tool(toolset=TOOLSET, description="Conformance fixture: returns an embedded resource.", input_schema=NO_ARGUMENTS)
def test_embedded_resource() -> ToolOutput:
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return ToolOutput(content=[{"type": "resource", "resource": resource}])


@tool(
    toolset=TOOLSET,
    description="Conformance fixture: returns text, an image and an embedded resource.",
    input_schema=NO_ARGUMENTS,
)
def test_multiple_content_types() -> ToolOutput:
    resource = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}),
    }
    return ToolOutput(
        content=[
            {"type": "text", "text": "Multiple content types test:"},
            _image(),
            {"type": "resource", "resource": resource},
        ]
    )


@tool(toolset=TOOLSET, description="Conformance fixture: logs three messages while it runs.", input_schema=NO_ARGUMENTS)
async def test_tool_with_logging(context: ToolContext) -> str:
    await context.log("info", "Tool execution started")
    await asyncio.sleep(STEP_SECONDS)
    await context.log("info", "Tool processing data")
    await asyncio.sleep(STEP_SECONDS)
    await context.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


@tool(toolset=TOOLSET, description="Conformance fixture: always fails.", input_schema=NO_ARGUMENTS)
def test_error_handling() -> str:
    # The suite wants an isError result with text; the text is the catalog's, as for every failed call.
    raise IntentionalFailure("This tool intentionally returns an error for testing")


@tool(
    toolset=TOOLSET, description="Conformance fixture: reports progress 0, 50, 100 of 100.", input_schema=NO_ARGUMENTS
)
async def test_tool_with_progress(context: ToolContext) -> str:
    for step in (0, 50, 100):
        if step:
            await asyncio.sleep(STEP_SECONDS)
        await context.progress(step, 100, f"Completed step {step} of 100")
    return "Tool with progress executed successfully"


@tool(
    toolset=TOOLSET,
    description="Conformance fixture: asks the client's model to answer a prompt (sampling).",
    input_schema={
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": "The prompt to send to the model"}},
        "required": ["prompt"],
    },
)
async def test_sampling(prompt: str, context: ToolContext) -> str:
    return f"LLM response: {await context.sample(prompt, max_tokens=100)}"


@tool(
    toolset=TOOLSET,
    description="Conformance fixture: asks the user for a username and an email address (elicitation).",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The message to show the user"}},
        "required": ["message"],
    },
)
async def test_elicitation(message: str, context: ToolContext) -> str:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = await context.elicit(message, schema)
    return f"User response: action={answer.action}, content={json.dumps(answer.content)}"


# SEP-1034: a default for every primitive type.
DEFAULTS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}

# SEP-1330: the five enum shapes.
ENUMS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


@tool(
    toolset=TOOLSET,
    description="Conformance fixture: an elicitation with a default for every primitive type (SEP-1034).",
    input_schema=NO_ARGUMENTS,
)
async def test_elicitation_sep1034_defaults(context: ToolContext) -> str:
    answer = await context.elicit("Please provide user information", DEFAULTS_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


@tool(
    toolset=TOOLSET,
    description="Conformance fixture: an elicitation with the five enum schema shapes (SEP-1330).",
    input_schema=NO_ARGUMENTS,
)
async def test_elicitation_sep1330_enums(context: ToolContext) -> str:
    answer = await context.elicit("Please select values using different enum schema types", ENUMS_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


@tool(
    toolset=TOOLSET,
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
)
def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "address": address}


@tool(
    toolset=TOOLSET,
    description="Conformance fixture: closes its SSE stream mid-call, so the client reconnects (SEP-1699).",
    input_schema=NO_ARGUMENTS,
)
async def test_reconnection(context: ToolContext) -> str:
    await context.log("info", "Before disconnect")
    await context.close_stream()
    await asyncio.sleep(RECONNECT_WAIT_SECONDS)
    await context.log("info", "After reconnect")
    return "Reconnection test completed"


# --- Resources -----------------------------------------------------------------------------------------------

RESOURCES: tuple[Mapping[str, Any], ...] = (
    {
        "uri": "test://static-text",
        "name": "static-text",
        "description": "A static text resource for testing",
        "mimeType": "text/plain",
    },
    {
        "uri": "test://static-binary",
        "name": "static-binary",
        "description": "A static binary resource (a PNG image) for testing",
        "mimeType": "image/png",
    },
    {
        "uri": "test://watched-resource",
        "name": "watched-resource",
        "description": "A resource that can be subscribed to for updates",
        "mimeType": "text/plain",
    },
)
RESOURCE_TEMPLATES: tuple[Mapping[str, Any], ...] = (
    {
        "uriTemplate": "test://template/{id}/data",
        "name": "template-data",
        "description": "A resource template with parameter substitution",
        "mimeType": "application/json",
    },
)
_TEMPLATE_URI = re.compile(r"test://template/(?P<id>[^/]+)/data")
_TEXTS = {
    "test://static-text": "This is the content of the static text resource.",
    "test://watched-resource": "Watched resource content",
}
# URIs subscribed to. Process-wide and never notified: the fixture only has to accept (un)subscriptions.
subscriptions: set[str] = set()


def resource_contents(uri: str) -> list[dict[str, Any]] | None:
    """The contents of a fixture resource as MCP resource contents, or None for an unknown URI."""
    if uri in _TEXTS:
        return [{"uri": uri, "mimeType": "text/plain", "text": _TEXTS[uri]}]
    if uri == "test://static-binary":
        return [{"uri": uri, "mimeType": "image/png", "blob": IMAGE_PNG_BASE64}]
    match = _TEMPLATE_URI.fullmatch(uri)
    if match:
        item = match["id"]
        text = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
        return [{"uri": uri, "mimeType": "application/json", "text": text}]
    return None


def is_resource(uri: str) -> bool:
    return any(resource["uri"] == uri for resource in RESOURCES)


# --- Prompts -------------------------------------------------------------------------------------------------

PROMPTS: tuple[Mapping[str, Any], ...] = (
    {"name": "test_simple_prompt", "description": "A simple prompt without arguments"},
    {
        "name": "test_prompt_with_arguments",
        "description": "A prompt with required arguments",
        "arguments": [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    },
    {
        "name": "test_prompt_with_embedded_resource",
        "description": "A prompt that includes an embedded resource",
        "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}],
    },
    {"name": "test_prompt_with_image", "description": "A prompt that includes image content"},
)
# Completion values offered for test_prompt_with_arguments, filtered by the typed prefix.
ARGUMENT_SUGGESTIONS = ("paris", "park", "party", "test-value-1", "test-value-2")


class MissingPromptArgument(Exception):
    """A required prompt argument was not given; ``name`` says which."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def prompt_messages(name: str, arguments: Mapping[str, str]) -> list[dict[str, Any]] | None:
    """The messages of a fixture prompt, or None for an unknown prompt name."""
    prompt = next((p for p in PROMPTS if p["name"] == name), None)
    if prompt is None:
        return None
    for argument in prompt.get("arguments", ()):
        if argument["required"] and not arguments.get(argument["name"]):
            raise MissingPromptArgument(argument["name"])
    if name == "test_simple_prompt":
        return [_user({"type": "text", "text": "This is a simple prompt for testing."})]
    if name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{arguments['arg1']}', arg2='{arguments['arg2']}'"
        return [_user({"type": "text", "text": text})]
    if name == "test_prompt_with_embedded_resource":
        resource = {
            "uri": arguments["resourceUri"],
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        return [
            _user({"type": "resource", "resource": resource}),
            _user({"type": "text", "text": "Please process the embedded resource above."}),
        ]
    return [_user(_image()), _user({"type": "text", "text": "Please analyze the image above."})]


def _user(content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content}


def complete_prompt_argument(prompt: str, argument: str, value: str) -> list[str]:
    """Completion values for an argument of a fixture prompt (only test_prompt_with_arguments has any)."""
    if prompt != "test_prompt_with_arguments" or argument not in ("arg1", "arg2"):
        return []
    return [s for s in ARGUMENT_SUGGESTIONS if s.startswith(value.lower())]

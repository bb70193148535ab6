"""The one tool-name vocabulary: which strings are tool names, everywhere a tool name is checked.

The MCP rule (SEP-986): 1 to 128 characters of ``A-Z a-z 0-9 _ - .``. The registry refuses to register anything
else, the safety screen shows nothing else to a model, ingest stores nothing else, and a call of a name outside
it is recorded under ``INVALID_TOOL_NAME``, so it is still counted. Pure: no Django, no I/O.
"""

from __future__ import annotations

import re
from typing import TypeGuard

TOOL_NAME_PATTERN = r"[A-Za-z0-9_.\-]{1,128}"
TOOL_NAME_MAX_LENGTH = 128
TOOL_NAME_RULE = "1-128 letters, digits, '_', '-' or '.'"
# What a called name outside the vocabulary is recorded as. The parentheses are outside the vocabulary, so no tool
# can be registered under this name; ingest accepts it for the tool field only.
INVALID_TOOL_NAME = "(invalid-name)"

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


def is_tool_name(value: object) -> TypeGuard[str]:
    """True when ``value`` is a string in the tool-name vocabulary."""
    return isinstance(value, str) and _TOOL_NAME.fullmatch(value) is not None


def recorded_tool_name(value: object) -> str:
    """The name an outcome is recorded under: the called name when it is a tool name, else ``INVALID_TOOL_NAME``."""
    return value if is_tool_name(value) else INVALID_TOOL_NAME


def is_recorded_tool_name(value: object) -> TypeGuard[str]:
    """True for what ``recorded_tool_name`` can return: what ingest accepts in an event's tool field."""
    return value == INVALID_TOOL_NAME or is_tool_name(value)

"""The names and ranges the whole product agrees on: tool names, catalog code names, JSON-RPC codes.

Tool names follow the MCP rule (SEP-986): 1 to 128 characters of ``A-Z a-z 0-9 _ - .``. The registry refuses to
register anything else, the safety screen shows nothing else to a model, ingest stores nothing else, and a call of
a name outside it is recorded under ``INVALID_TOOL_NAME``, so it is still counted.

JSON-RPC 2.0 reserves -32768..-32000 for the protocol: a catalog row may use a code in that range only when JSON-RPC
or MCP defines it (or it is one of FastMCP's legacy codes); the database constraint, the catalog's rule
and the renderer all read the numbers from here. The bottom layer: imports nothing of ours, no Django, no I/O.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from typing import TypeGuard

TOOL_NAME_PATTERN = r"[A-Za-z0-9_.\-]{1,128}"
TOOL_NAME_MAX_LENGTH = 128
TOOL_NAME_RULE = "1-128 letters, digits, '_', '-' or '.'"
# What a called name outside the vocabulary is recorded as. The parentheses are outside the vocabulary, so no tool
# can be registered under this name; ingest accepts it for the tool field only.
INVALID_TOOL_NAME = "(invalid-name)"

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)

# An upstream's name, as operators register it (``errcatalog.gateway.models.Upstream.name``), is also the path of
# the server that serves it alone: ``/mcp/<name>``; so is a named server's (``NamedServer.name``), which staff compose
# of our tools and upstreams, and which no upstream may share. The endpoint at ``/mcp`` itself is the server named
# ``ROOT_SERVER``, which nothing else can be named, so a token's list of servers names every kind without ambiguity.
SERVER_NAME_PATTERN = r"[a-z0-9][a-z0-9_-]{0,63}"
ROOT_SERVER = ""
SERVER_NAME_RULE = (
    "'' for /mcp itself, or an upstream's or a named server's name (lower-case letters, digits, '-' and '_', "
    "at most 64)"
)
# Names a named server may not take: the paths clients and SDKs append to an MCP endpoint by convention (``/mcp/mcp``
# from a mount inside a mount, ``/sse`` and ``/messages`` of the older HTTP+SSE transport), where a server would be
# reached by mistake.
RESERVED_SERVER_NAMES = frozenset({"mcp", "sse", "messages"})
_SERVER_NAME = re.compile(SERVER_NAME_PATTERN)

# Catalog codes are UPPER_SNAKE_CASE, as Sentry's error-handling conventions name them; the catalog document's JSON
# Schema says the same.
CODE_PATTERN = r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$"

# JSON-RPC 2.0 reserves this range for the protocol; product codes must live outside it (DESIGN §4.5).
JSONRPC_RESERVED_MIN = -32768
JSONRPC_RESERVED_MAX = -32000
# Codes JSON-RPC itself and the MCP specification define by number.
JSONRPC_PARSE_ERROR = -32700
JSONRPC_INVALID_REQUEST = -32600
JSONRPC_METHOD_NOT_FOUND = -32601
JSONRPC_INVALID_PARAMS = -32602
JSONRPC_INTERNAL_ERROR = -32603
MCP_RESOURCE_NOT_FOUND = -32002
# The only reserved codes a catalog row may use: those JSON-RPC and MCP define.
JSONRPC_DEFINED_CODES = (
    JSONRPC_PARSE_ERROR,
    JSONRPC_INVALID_REQUEST,
    JSONRPC_METHOD_NOT_FOUND,
    JSONRPC_INVALID_PARAMS,
    JSONRPC_INTERNAL_ERROR,
    MCP_RESOURCE_NOT_FOUND,
    -32020,
    -32021,
    -32022,
    -32042,
)
# The legacy codes FastMCP chose, reproducible as an option for clients that expect them.
JSONRPC_LEGACY_CODES = (-32001, -32000)
# Our own code for "too many open sessions for this token" (HTTP 429), outside the reserved range.
JSONRPC_SESSION_LIMIT = -31429


# Words of a parameter name that say it holds a secret ("password", "api_key", "clientSecret", "github_token").
# Nobody is asked for such a value in the conversation, which the model and its logs keep: no question, no form.
_SECRET_WORDS = frozenset(
    {"password", "passwd", "passphrase", "secret", "token", "apikey", "credential", "credentials", "otp", "pin", "cvv"}
)
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("auth", "key")})
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def is_secret_name(name: str) -> bool:
    """True when a parameter's name says it holds a secret (its words, split at ``_ - .``, digits and camelCase)."""
    words = [word.lower() for word in _NAME_WORDS.findall(name)]
    pairs = itertools.pairwise(words)
    return any(word in _SECRET_WORDS for word in words) or any(pair in _SECRET_PAIRS for pair in pairs)


def is_tool_name(value: object) -> TypeGuard[str]:
    """True when ``value`` is a string in the tool-name vocabulary."""
    return isinstance(value, str) and _TOOL_NAME.fullmatch(value) is not None


def is_server_name(value: object) -> TypeGuard[str]:
    """True for the name of a server the MCP endpoint may serve: ``ROOT_SERVER`` or an upstream's name."""
    return isinstance(value, str) and (value == ROOT_SERVER or _SERVER_NAME.fullmatch(value) is not None)


def recorded_tool_name(value: object) -> str:
    """The name an outcome is recorded under: the called name when it is a tool name, else ``INVALID_TOOL_NAME``."""
    return value if is_tool_name(value) else INVALID_TOOL_NAME


def is_recorded_tool_name(value: object) -> TypeGuard[str]:
    """True for what ``recorded_tool_name`` can return: what ingest accepts in an event's tool field."""
    return value == INVALID_TOOL_NAME or is_tool_name(value)


def is_reserved_jsonrpc_code(value: int) -> bool:
    """True when ``value`` lies in JSON-RPC's reserved range and neither JSON-RPC, MCP nor FastMCP's legacy
    codes define it."""
    allowed = JSONRPC_DEFINED_CODES + JSONRPC_LEGACY_CODES
    return JSONRPC_RESERVED_MIN <= value <= JSONRPC_RESERVED_MAX and value not in allowed


# JSON numbers as the product takes them: what an IEEE 754 double holds (I-JSON, RFC 7493 section 2.2). JSON itself
# puts no bound on a number, and Python parses a 309-digit integer as an int no float can hold (math and float()
# raise OverflowError on it) and 1e400 as infinity: neither is a value a tool is given or a message names.
_DOUBLE_MAX = int(sys.float_info.max)


def is_json_number(value: object) -> TypeGuard[int | float]:
    """True for an int or a float (never a bool) that a double holds: finite, within about ±1.8e308.

    Never converts ``value``: an int is compared as an int, so even one of thousands of digits costs no more than
    the comparison.
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -_DOUBLE_MAX <= value <= _DOUBLE_MAX
    return isinstance(value, float) and math.isfinite(value)


# How an upstream MCP server's call failed, in the words classification rules use (``kind``). The gateway sets one
# on every failure of an upstream's call; our own tools' failures have none (their rules name exception classes).
UPSTREAM_FAILURE_KINDS: dict[str, str] = {
    "tool_error": "the tool reported an error",
    "jsonrpc_error": "a JSON-RPC error",
    "http_status": "an HTTP error status",
    "timeout": "no answer in time",
    "connection": "a refused or dropped connection",
    "malformed": "an answer that is not MCP",
    "circuit_open": "circuit open after repeated failures",
}

# The codes an upstream's failure gets when no specific rule recognises it: the catalog's fallback for an upstream
# failure, and UNKNOWN_ERROR when not even a fallback rule matched. Such failures go to admin's inbox of
# unclassified upstream failures (errcatalog.gateway.inbox); every other code counts as classified.
UNCLASSIFIED_UPSTREAM_CODES = frozenset({"UPSTREAM_TOOL_FAILED", "UNKNOWN_ERROR"})

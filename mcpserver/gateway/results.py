"""What a forwarded call's result says: a failed tool's text and catalog code, and a result passed on as ours.

``UpstreamConnection.call`` (``connection``) raises an ``UpstreamToolError`` with ``result_text`` and
``envelope_code`` for a result that is an error, and passes a success on through ``without_protocol_meta``.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

# Catalog envelopes an upstream may answer with (another errcatalog, or a server using the toolError:v1 and
# needsInput:v1 envelopes).
_ENVELOPES = frozenset({"toolError:v1", "needsInput:v1"})
# The prefix of ``_meta`` keys the protocol reserves for itself.
_PROTOCOL_META = "io.modelcontextprotocol/"


# What a failed tool's text is said to be when its result has none: for rules and the inbox; never quoted.
NO_TEXT = "(no text)"


def result_text(result: types.CallToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return "\n".join(texts) or NO_TEXT


def envelope_code(result: types.CallToolResult) -> str | None:
    """The catalog code of a ``toolError:v1``/``needsInput:v1`` envelope in the result, if it carries one.

    Only the code is taken (the catalog renders its own text for it), and only if it is a code name.
    """
    candidates: list[Any] = [result.structured_content]
    for block in result.content:
        if isinstance(block, types.TextContent) and block.text.lstrip().startswith("{") and len(block.text) < 65536:
            try:
                candidates.append(json.loads(block.text))
            except ValueError:
                continue
    for candidate in candidates:
        if isinstance(candidate, dict) and candidate.get("kind") in _ENVELOPES:
            code = candidate.get("code")
            if isinstance(code, str) and code.isupper() and code.replace("_", "").isalnum() and len(code) <= 64:
                return code
    return None


def without_protocol_meta[R: types.Result](result: R) -> R:
    """``result`` without the protocol's own metadata (the upstream's server info), which describes the upstream's
    answer, not ours."""
    if result.meta and any(key.startswith(_PROTOCOL_META) for key in result.meta):
        meta = {k: v for k, v in result.meta.items() if not k.startswith(_PROTOCOL_META)}
        return result.model_copy(update={"meta": meta or None})
    return result

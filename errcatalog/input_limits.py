"""Bounds on documents that come from outside (REST request bodies, catalog files, ``mcpServers`` blocks), measured
without recursion, so that a hostile document is refused before a parser or a walk that recurses sees it.

Python's JSON decoder, PyYAML's constructor and libyaml's composer recurse once per nesting level: ten thousand
levels end in a ``RecursionError`` after seconds, fifty thousand in libyaml overflow the C stack and kill the
process. No document we read nests more than a handful of levels, so the depth is measured first and refused
past a limit; strings are measured after parsing, so that one field cannot carry megabytes into every process's
catalog snapshot.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

# Openers become +1, closers -1 (as signed bytes), everything else is deleted: the body's nesting as steps.
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))

Path = tuple[str | int, ...]


def json_depth_exceeds(body: bytes, limit: int) -> bool:
    """True when ``body`` nests arrays/objects more than ``limit`` deep (brackets inside strings do not count).

    Without recursion and in C-speed steps over the whole body (no Python loop per character): escaped
    backslashes and quotes are dropped, the parts between quotes (the strings) are left out, the brackets left
    become +1/-1 steps, and the depth is their highest running sum. It need not be valid JSON: what is not valid
    is the decoder's to refuse, once the depth is known to be safe.
    """
    if b'"' in body:
        unescaped = body.replace(b"\\\\", b"").replace(b'\\"', b"")
        body = b"".join(unescaped.split(b'"')[0::2])
    steps = array("b", body.translate(_STEPS, _NOT_BRACKETS))
    return max(accumulate(steps), default=0) > limit


def json_loads_bounded(text: bytes | str, max_depth: int) -> Any:
    """``json.loads`` for a document from outside: one nested deeper than ``max_depth`` is refused as invalid JSON
    (``json.JSONDecodeError``, a ``ValueError``, which every reader of a body handles) before the decoder, whose
    ``RecursionError`` no caller expects, sees it."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if json_depth_exceeds(raw, max_depth):
        raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", "", 0)
    return json.loads(text)


def depth_bounded_json_decoder(max_depth: int) -> type[json.JSONDecoder]:
    """A ``json.JSONDecoder`` that refuses text nesting deeper than ``max_depth`` as invalid JSON
    (``JSONDecodeError``, which every caller of a decoder handles) before decoding it: for Django's form
    ``JSONField``, which would let the decoder's ``RecursionError`` through as a 500."""

    class DepthBoundedJSONDecoder(json.JSONDecoder):
        def decode(self, s: str, *args: Any) -> Any:
            if json_depth_exceeds(s.encode("utf-8", "surrogatepass"), max_depth):
                raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", s, 0)
            return super().decode(s, *args)

    return DepthBoundedJSONDecoder


@dataclass(frozen=True)
class LongString:
    """A string of a parsed document longer than the limit: where it is, and whether it is a mapping's key (then
    ``path`` is the mapping's, since the key itself is too long to name)."""

    path: Path
    length: int
    is_key: bool = False


def long_strings(document: Any, limit: int) -> Iterator[LongString]:
    """Every string (value or mapping key) of a parsed JSON or YAML document longer than ``limit`` characters.

    Walks with a stack of its own, not by recursion, so any depth is safe to walk; lists and mappings are the
    only containers parsed documents hold.
    """
    stack: list[tuple[Path, Any]] = [((), document)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            if len(node) > limit:
                yield LongString(path, len(node))
        elif isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, str) and len(key) > limit:
                    yield LongString(path, len(key), is_key=True)
                    continue
                stack.append(((*path, key), value))
        elif isinstance(node, list):
            stack.extend(((*path, index), value) for index, value in enumerate(node))

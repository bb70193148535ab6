"""The bounds on documents from outside, measured without recursion (``errcatalog.input_limits``)."""

from __future__ import annotations

import json

import pytest

from errcatalog.input_limits import LongString, json_loads_bounded, long_strings


def test_long_strings_names_each_long_value_and_key_by_its_place():
    document = {"codes": [{"code": "X", "variants": [{"message": "m" * 11}]}], "k" * 12: "short", "ok": ["y" * 10]}

    found = sorted(long_strings(document, 10), key=lambda s: s.length)

    assert found == [LongString(("codes", 0, "variants", 0, "message"), 11), LongString((), 12, is_key=True)]


def test_long_strings_walks_any_depth_without_recursion():
    deep: list = ["z" * 5]
    for _ in range(100_000):
        deep = [deep]

    found = list(long_strings(deep, 4))

    assert [(len(s.path), s.length) for s in found] == [(100_001, 5)]


def test_json_loads_bounded_refuses_a_deep_document_as_invalid_json_before_decoding_it():
    assert json_loads_bounded(b'{"a": [[1]], "b": "[[[[[["}', 3) == {"a": [[1]], "b": "[[[[[["}
    for deep in ("[" * 4 + "]" * 4, "[" * 200_000 + "]" * 200_000):  # the second would be a RecursionError
        with pytest.raises(json.JSONDecodeError, match="nested deeper than 3 levels"):
            json_loads_bounded(deep, 3)

"""Variant selection and the per-snapshot render caches (the snapshot a process serves: test_catalog_serving.py)."""

from __future__ import annotations

import pytest

from errcatalog.render import Failure, render
from errcatalog.render.entries import CodeEntry, VariantEntry


def _entry(*variants: VariantEntry) -> CodeEntry:
    return CodeEntry(code="X", category="unknown", kind="error", variants=variants)


A = VariantEntry("a", "A", "do a", weight=75)
B = VariantEntry("b", "B", "do b", weight=25)
PAUSED = VariantEntry("paused", "P", "do p", weight=0)
GERMAN = VariantEntry("a", "A-de", "mach a", locale="de")


def test_weights_split_the_picks():
    entry = _entry(A, B, PAUSED)
    picks = [entry.variant(pick=i / 100).name for i in range(100)]
    assert picks.count("a") == 75
    assert picks.count("b") == 25
    assert "paused" not in picks


def test_a_paused_variant_is_still_chosen_by_name():
    assert _entry(A, PAUSED).variant(name="paused") is PAUSED


def test_locale_variants_win_and_fall_back_to_the_default_locale():
    entry = _entry(A, GERMAN)
    assert entry.variant(locale="de") is GERMAN
    assert entry.variant(locale="fr") is A
    assert entry.variant(name="a", locale="de") is GERMAN
    assert entry.variant(name="a", locale="") is A


def test_unknown_variant_name_is_an_error():
    with pytest.raises(KeyError):
        _entry(A).variant(name="nope")


def test_render_records_the_variant_used(default_snapshot):
    assert render(default_snapshot, Failure("UNKNOWN_ERROR")).variant == "default"


def test_a_repeated_failure_is_rendered_once_per_snapshot(default_snapshot):
    import dataclasses

    failure = Failure("MISSING_PARAMETER", tool_name="send_email")
    first = render(default_snapshot, failure)
    assert render(default_snapshot, failure) is first
    assert render(default_snapshot, failure, max_chars=100) is not first
    copy = dataclasses.replace(default_snapshot)
    assert len(copy.render_cache) == 0  # a changed snapshot never sees another snapshot's renders
    assert render(copy, failure) == first


def test_an_unhashable_partial_result_is_rendered_every_time(default_snapshot):
    failure = Failure("TIMEOUT", tool_name="search_documents", partial_result=[{"id": 1}])
    assert render(default_snapshot, failure).partial_result == [{"id": 1}]
    assert render(default_snapshot, failure) is not render(default_snapshot, failure)


def test_rendered_data_cannot_be_changed_by_a_face(default_snapshot):
    rendered = render(default_snapshot, Failure("MISSING_PARAMETER", tool_name="send_email"))
    with pytest.raises(TypeError):
        rendered.data["tool_name"] = "other"

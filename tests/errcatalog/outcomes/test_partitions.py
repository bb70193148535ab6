"""Ingest partitions, the rules: an episode key's slot and partition, stream names and partition counts.

Draining and locking by partition are tested with ingestion in ``test_ingest.py`` and with real workers in
``test_worker.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from errcatalog.outcomes import partitions

REPO_ROOT = Path(__file__).resolve().parents[3]
KEYS = [(f"tool_{n % 7}", f"token:{n}", f"s-{n % 3}" if n % 2 else "") for n in range(2000)]


def test_a_keys_slot_is_its_crc32_and_the_same_in_another_process():
    # CRC-32 of "search\x1ftoken:1\x1fs-1" is 0xc5b71df8: slot 56. Python's own hash() differs per process.
    assert partitions.slot(("search", "token:1", "s-1")) == 0xC5B7_1DF8 % 64 == 56
    code = "from errcatalog.outcomes import partitions; print(partitions.slot(('search', 'token:1', 's-1')))"
    command = [sys.executable, "-c", code]
    other = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO_ROOT)  # noqa: S603 (fixed)
    assert other.stdout.strip() == "56"


def test_the_parts_of_a_key_cannot_be_shifted_into_each_other():
    assert partitions.slot(("ab", "c", "")) != partitions.slot(("a", "bc", ""))


def test_any_text_has_a_slot_even_a_lone_surrogate():
    # JSON can carry "\ud800"; such a name must still find its partition rather than fail the recorder's send.
    assert 0 <= partitions.slot(("t", "\ud800", "")) < partitions.SLOTS


@pytest.mark.parametrize("count", partitions.PARTITION_COUNTS)
def test_every_partition_owns_whole_slots(count):
    owner: dict[int, int] = {}
    for key in KEYS:
        slot, partition = partitions.slot(key), partitions.partition(key, count)
        assert 0 <= partition < count
        assert owner.setdefault(slot, partition) == partition  # a slot never belongs to two partitions
    assert set(owner.values()) == set(range(count))  # and every partition gets keys


def test_keys_spread_evenly_over_the_partitions():
    counts = [0] * 4
    for key in KEYS:
        counts[partitions.partition(key, 4)] += 1
    assert min(counts) > len(KEYS) / 4 * 0.8


def test_a_batchs_slots_are_distinct_and_ascending():
    slots = partitions.slots_of(KEYS[:50] + KEYS[:50])
    assert slots == sorted(set(slots))
    assert set(slots) == {partitions.slot(key) for key in KEYS[:50]}


def test_partition_zero_keeps_the_stream_name_of_a_single_stream():
    assert partitions.stream_key("errcatalog:outcomes", 0) == "errcatalog:outcomes"
    assert partitions.stream_key("errcatalog:outcomes", 3) == "errcatalog:outcomes:3"
    assert partitions.stream_keys("x", 3) == ["x", "x:1", "x:2"]
    assert len(partitions.stream_keys("x")) == partitions.SLOTS


@pytest.mark.parametrize("count", [0, 3, 5, 128, -4])
def test_a_count_that_does_not_divide_the_slots_is_refused_with_the_allowed_values(count):
    problem = partitions.check_count(count)
    assert problem is not None
    assert "1, 2, 4, 8, 16, 32, 64" in problem and str(count) in problem


def test_the_divisors_of_the_slots_are_accepted():
    assert [count for count in range(1, 65) if partitions.check_count(count) is None] == [1, 2, 4, 8, 16, 32, 64]

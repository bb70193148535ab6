"""Ingest partitions, the rules: which stream an outcome event travels in and which lock its episode takes.

Pure: names and numbers in, names and numbers out. Imports only ``errcatalog.outcomes.episodes`` (for the key).

- An event's episode key (tool, client, session) decides everything: its ``slot`` (one of ``SLOTS``, from a CRC-32
  of the key, the same in every process and Python version) and its ``partition`` (the slot modulo the number of
  partitions). All events of a key travel in one partition's stream, in order, so an episode is always decided
  by one drainer at a time, and drainers of different partitions never decide about the same episode.
- ``PARTITION_COUNTS``: the partition count must divide ``SLOTS``, so a partition owns whole slots and two
  partitions never share one: their transactions never wait for each other's lock.
- ``stream_key(base, partition)``: partition 0 is the base key itself (a deployment with one partition keeps
  the stream name it always had), partition n is ``base:n``.
- ``slots_of(keys)``: the sorted slots a batch must lock; taking them in ascending order means two
  transactions never wait for each other in a circle.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from errcatalog.outcomes.episodes import Key

# Lock slots: the most partitions a deployment can have, and the granularity of the database's correlation locks.
SLOTS = 64
PARTITION_COUNTS: tuple[int, ...] = tuple(2**n for n in range(7))  # 1, 2, 4 … 64: the divisors of SLOTS


def slot(key: Key) -> int:
    """The lock slot of an episode key: stable across processes, hosts and restarts."""
    tool, client, session = key
    return zlib.crc32("\x1f".join((tool, client, session)).encode("utf-8", "surrogatepass")) % SLOTS


def partition(key: Key, count: int) -> int:
    """The partition (0 … count - 1) whose stream carries the events of ``key``."""
    return slot(key) % count


def slots_of(keys: Iterable[Key]) -> list[int]:
    """The distinct slots of ``keys``, ascending: the order a transaction takes their locks in."""
    return sorted({slot(key) for key in keys})


def stream_key(base: str, index: int) -> str:
    """The Redis stream of partition ``index``: the base key for partition 0, ``base:index`` for the others."""
    return base if index == 0 else f"{base}:{index}"


def stream_keys(base: str, count: int = SLOTS) -> list[str]:
    """The streams of partitions 0 … count - 1 (all that can exist, by default: a drainer also empties the
    partitions a smaller count left behind)."""
    return [stream_key(base, index) for index in range(count)]


def check_count(count: int) -> str | None:
    """Why ``count`` cannot be a partition count, or None when it can."""
    if count not in PARTITION_COUNTS:
        allowed = ", ".join(str(value) for value in PARTITION_COUNTS)
        return f"the number of ingest partitions must be one of {allowed} (a divisor of {SLOTS}), not {count}"
    return None

"""How much one ShareFetch may acquire: records, bytes, and whole stored batches (KIP-932 as Kafka 4.x does it).

Measured on Apache Kafka 4.4 (one 5-record batch is about 5.1 KB):

- ``max_bytes`` is a budget over the whole response: stored batches are taken while they fit, but the
  response's first batch always goes, even when it alone is larger (``max_bytes=1`` still acquires one
  batch). A batch that does not fit ends the response; its records stay available.
- In the *batch-optimized* acquire mode (ShareFetch v1, and v2 with ``share_acquire_mode`` 0) records are
  acquired in whole stored batches: ``max_records`` is a soft limit, reached by completing the batch that
  holds the last record within it (``max_records=3`` acquires a 5-record batch, 7 acquires two). In the
  *record-limit* mode (v2, ``share_acquire_mode`` 1) exactly ``max_records`` at most.
- ``batch_size`` shapes the answer's AcquiredRecords in batch-optimized mode: consecutive stored batches
  are grouped until a group holds at least ``batch_size`` records, one AcquiredRecords entry per group
  (and per delivery count within it).

Records that are not available (settled, held, delayed) or that the subscription mode withholds are never
acquired to complete a batch: completion only adds the batch's other eligible records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from logwright.core.rangeset import RangeSet

BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
"""ShareFetch v2 ``share_acquire_mode`` values (v1 is always batch-optimized)."""


@dataclass(frozen=True, slots=True)
class BatchSpan:
    """A stored batch as acquisition sees it: its offsets and its size in bytes."""

    first: int
    last: int
    size: int


@dataclass(slots=True)
class FetchBudget:
    """What is left of one ShareFetch's limits while its partitions are visited in turn."""

    records: int
    bytes: int
    batch_optimized: bool = True
    batch_size: int = 0
    started: bool = False
    """A batch is already in the response (so the next one must fit in ``bytes``)."""

    @property
    def exhausted(self) -> bool:
        return self.records <= 0 or (self.started and self.bytes <= 0)

    def spend(self, records: int, size: int) -> None:
        self.records -= records
        self.bytes -= size
        self.started = True


def completing_batch(chosen: RangeSet, batches: Sequence[BatchSpan]) -> BatchSpan | None:
    """The stored batch holding the last chosen offset, if the choice stops inside it (batch-optimized mode)."""
    last = chosen.last
    if last is None:
        return None
    for batch in batches:
        if batch.first <= last <= batch.last:
            return batch if last < batch.last else None
    return None


def within_bytes(chosen: RangeSet, batches: Sequence[BatchSpan], budget: FetchBudget
                 ) -> tuple[RangeSet, list[BatchSpan]]:
    """The chosen offsets cut to the stored batches that fit the byte budget, and those batches.

    ``batches`` are the stored batches holding chosen offsets, in offset order. The budget is not spent here.
    """
    kept: list[BatchSpan] = []
    used = 0
    for batch in batches:
        if (kept or budget.started) and used + batch.size > budget.bytes:
            break
        kept.append(batch)
        used += batch.size
    if not kept:
        return RangeSet(), []
    return chosen.below(kept[-1].last + 1), kept


def grouped(ranges: Sequence[tuple[int, int, int]], batches: Sequence[BatchSpan], batch_size: int
            ) -> tuple[tuple[int, int, int], ...]:
    """``(first, last, delivery count)`` ranges split where groups of stored batches of ``batch_size`` records end."""
    if batch_size <= 0:
        return tuple(ranges)
    ends: list[int] = []
    count = 0
    for batch in batches:
        count += batch.last - batch.first + 1
        if count >= batch_size:
            ends.append(batch.last)
            count = 0
    pieces: list[tuple[int, int, int]] = []
    for first, last, delivery_count in ranges:
        start = first
        for end in ends:
            if start <= end < last:
                pieces.append((start, end, delivery_count))
                start = end + 1
        pieces.append((start, last, delivery_count))
    return tuple(pieces)

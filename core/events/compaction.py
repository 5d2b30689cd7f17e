"""Events of the log cleaner (tags 120-129): what a compaction pass rewrote in the ``records`` column family.

A pass rewrites the stored batches of one partition's cleaned range slice by slice; each slice is one
WriteBatch holding the rewritten and deleted batches together with its `PartitionCompacted`, so a crash leaves
a slice as it was or as it became, never a mix. Offsets never change: a rewritten batch keeps its base offset
and last offset delta, and the records it lost leave gaps that consumers step over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import Event


@dataclass(frozen=True, slots=True)
class PartitionCompacted(Event):
    """One slice of a compaction pass: the batches with base offsets in ``from_offset..to_offset - 1`` rewritten.

    ``records_removed``, ``batches_removed`` (batches left with no record, deleted) and ``bytes_removed`` say
    what the slice took away. The last slice of a pass carries ``cleaned_to``, the pass's end (the first dirty
    offset from now on, Kafka's cleaner checkpoint), and ``next_delete_horizon_ms``, the earliest time a kept
    tombstone or transaction marker may go (-1: none kept); other slices carry -1 in both.
    """

    TAG: ClassVar[int] = 120
    partition_id: int
    from_offset: int
    to_offset: int
    records_removed: int
    batches_removed: int
    bytes_removed: int
    cleaned_to: int = -1
    next_delete_horizon_ms: int = -1


COMPACTION_EVENT_TYPES: tuple[type[Event], ...] = (PartitionCompacted,)

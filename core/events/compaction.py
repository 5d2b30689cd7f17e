"""Events of the log cleaner (tags 120-129): what a compaction pass rewrote in the ``records`` column family.

A pass rewrites the stored batches of one partition's cleaned range slice by slice; each slice is one
WriteBatch holding the rewritten and deleted batches together with its `PartitionCompacted`, so a crash leaves
a slice as it was or as it became, never a mix. Offsets never change: a rewritten batch keeps its base offset
and last offset delta, and the records it lost leave gaps that consumers step over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from logwright.core.events.base import Event


@dataclass(frozen=True, slots=True)
class PartitionCompacted(Event):
    """One slice of a compaction pass: the batches with base offsets in ``from_offset..to_offset - 1`` rewritten.

    ``records_removed``, ``batches_removed`` (batches left with no record, deleted) and ``bytes_removed`` say
    what the slice took away. The last slice of a pass carries ``cleaned_to``, the pass's end (the first dirty
    offset from now on, Kafka's cleaner checkpoint), and ``next_delete_horizon_ms``, the earliest time a kept
    tombstone or transaction marker may go (-1: none kept); other slices carry -1 in both.

    The last slice also carries the largest timestamp the pass kept from the log start to ``cleaned_to`` and
    the base offset of the first batch holding it (-1, -1: nothing kept), what Kafka's cleaner recomputes as
    each cleaned segment's ``maxTimestampSoFar``: ListOffsets MAX_TIMESTAMP answers from it once the record
    with the partition's largest timestamp is compacted away. Version 1 events carry `NOT_RECORDED` there.
    """

    TAG: ClassVar[int] = 120
    VERSION: ClassVar[int] = 2
    partition_id: int
    from_offset: int
    to_offset: int
    records_removed: int
    batches_removed: int
    bytes_removed: int
    cleaned_to: int = -1
    next_delete_horizon_ms: int = -1
    kept_max_timestamp: int = -1
    kept_max_timestamp_offset: int = -1

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 (before the kept maximum was recorded): not known."""
        return [*fields, NOT_RECORDED, NOT_RECORDED] if version == 1 else fields


NOT_RECORDED = -2
"""The kept maximum of a pass written before it was recorded (version 1): the next pass records it."""

COMPACTION_EVENT_TYPES: tuple[type[Event], ...] = (PartitionCompacted,)

"""A partition's log as the broker knows it without reading a batch: start, end, size, last timestamp.

`append_batch` assigns the base offset of a new batch; `truncate` moves the log start. Both are
decisions from the current `PartitionState`, so offsets are allocated in exactly one place.

A partition nothing was ever appended to has no row: its state is `empty_partition` (the projection's ``empty``).
Creating a topic of 5,000 partitions folded and wrote 5,000 such rows, 12 ms of staging and 19 of commit in one
turn; it now folds none, and deleting it deletes the rows of the partitions that held records. Whether a
partition exists is the catalog's to say (its topic's ``partition_ids``), not this projection's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from logwright.core.errors import OffsetOutOfRange
from logwright.core.events import Event, LogTruncated, RecordsAppended, TopicDeleted
from logwright.core.events.compaction import PartitionCompacted
from logwright.core.projection import Projection


@dataclass(frozen=True, slots=True)
class PartitionState:
    partition_id: int
    log_start_offset: int = 0
    next_offset: int = 0
    byte_size: int = 0
    batch_count: int = 0
    max_timestamp: int = -1

    @property
    def record_count(self) -> int:
        return self.next_offset - self.log_start_offset


def partition_key(partition_id: int) -> str:
    return str(partition_id)


def _keys(event: Event) -> tuple[str, ...]:
    if type(event) is RecordsAppended:  # once per produced batch: the common case first, without a union check
        return (partition_key(event.partition_id),)
    if isinstance(event, RecordsAppended | LogTruncated | PartitionCompacted):
        return (partition_key(event.partition_id),)
    if isinstance(event, TopicDeleted):
        return tuple(map(partition_key, event.partition_ids))
    return ()  # a topic's creation names no row: its partitions are empty (partition ids are never reused)


def empty_partition(partition_id: int) -> PartitionState:
    """The state of a partition with no row: nothing appended yet."""
    return PartitionState(partition_id)


def _deleted(event: TopicDeleted, state: PartitionState | None, key: str) -> PartitionState | None:
    return None


def _appended(event: RecordsAppended, state: PartitionState | None, key: str) -> PartitionState | None:
    current = state or PartitionState(event.partition_id)
    # Built directly rather than with dataclasses.replace: this fold runs once per produced batch.
    return PartitionState(
        current.partition_id,
        current.log_start_offset,
        event.base_offset + event.record_count,
        current.byte_size + event.byte_size,
        current.batch_count + 1,
        current.max_timestamp if current.max_timestamp >= event.max_timestamp else event.max_timestamp,
    )


def _truncated(event: LogTruncated, state: PartitionState | None, key: str) -> PartitionState | None:
    current = state or PartitionState(event.partition_id)
    return replace(
        current,
        log_start_offset=max(current.log_start_offset, event.log_start_offset),
        byte_size=current.byte_size - event.removed_bytes,
        batch_count=current.batch_count - event.removed_batches,
    )


def _compacted(event: PartitionCompacted, state: PartitionState | None, key: str) -> PartitionState | None:
    """Compaction keeps every offset; only the size and the number of stored batches shrink."""
    current = state or PartitionState(event.partition_id)
    return replace(current, byte_size=current.byte_size - event.bytes_removed,
                   batch_count=current.batch_count - event.batches_removed)


_EVOLVE: dict[type[Event], Callable[[Any, PartitionState | None, str], PartitionState | None]] = {
    RecordsAppended: _appended, TopicDeleted: _deleted,
    LogTruncated: _truncated, PartitionCompacted: _compacted,
}
"""By the event's exact type, looked up once per partition: a topic's deletion evolves every one of its partitions
(5,000 through `functools.singledispatch` took 4 ms more of the event loop)."""


def _unchanged(event: Event, state: PartitionState | None, key: str) -> PartitionState | None:
    return state


PARTITIONS: Projection[PartitionState] = Projection(
    name="partitions", entity_keys=_keys,
    evolve=lambda state, event, key: _EVOLVE.get(type(event), _unchanged)(event, state, key),
    handles=frozenset({RecordsAppended, LogTruncated, TopicDeleted, PartitionCompacted}),
    removed_by=frozenset({TopicDeleted}),
    empty=lambda key: empty_partition(int(key)),
)


def append_batch(
    state: PartitionState,
    record_count: int,
    byte_size: int,
    max_timestamp: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> RecordsAppended:
    """The batch goes at the end of the log; the caller patches this base offset into its bytes."""
    if record_count < 1:
        raise ValueError(f"a batch holds at least one record, not {record_count}")
    return RecordsAppended(
        state.partition_id,
        state.next_offset,
        record_count,
        byte_size,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        transactional,
    )


def truncate(
    state: PartitionState,
    log_start_offset: int,
    removed_batches: int = 0,
    removed_bytes: int = 0,
    reason: str = "delete-records",
) -> LogTruncated | None:
    """Move the log start to ``log_start_offset`` (-1 means the end); ``None`` when nothing moves.

    The caller counts the whole batches that fall below the new start (the store knows their sizes),
    so the partition's size stays exact for byte-based retention and backlog quotas.
    """
    target = state.next_offset if log_start_offset == -1 else log_start_offset
    if target < 0 or target > state.next_offset:
        raise OffsetOutOfRange(
            f"cannot delete records before offset {log_start_offset}: the log of partition "
            f"{state.partition_id} ends at {state.next_offset}"
        )
    if target <= state.log_start_offset:
        return None
    return LogTruncated(state.partition_id, target, removed_batches, removed_bytes, reason)

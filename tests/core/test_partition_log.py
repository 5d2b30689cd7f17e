"""A partition's log decisions (append offsets, truncation) as given events / when command / then events."""

from __future__ import annotations

import pytest
from logwright.core.errors import OffsetOutOfRange
from logwright.core.events import (
    Event,
    LogTruncated,
    OffsetCommitted,
    PartitionsCreated,
    RecordsAppended,
    TopicCreated,
    TopicDeleted,
)
from logwright.core.log.partition_log import (
    PARTITIONS,
    PartitionState,
    append_batch,
    empty_partition,
    partition_key,
    truncate,
)
from logwright.core.projection import fold

TOPIC = TopicCreated("t", b"\x00" * 16, (7, 8))


def partition(*events: Event, partition_id: int = 7) -> PartitionState:
    """The partition's state as readers see it: no row is the projection's ``empty``."""
    state = fold(PARTITIONS, events).get(partition_key(partition_id))
    assert PARTITIONS.empty is not None
    return state if state is not None else PARTITIONS.empty(partition_key(partition_id))


def test_a_new_partition_is_empty_and_has_no_row() -> None:
    """A topic's creation folds nothing: 5,000 fresh rows were 30 ms of one turn; readers take no row as empty."""
    assert fold(PARTITIONS, [TOPIC, PartitionsCreated("t", (9,))]) == {}
    assert partition(TOPIC) == PartitionState(7, 0, 0, 0, 0, -1) == empty_partition(7)
    assert partition(TOPIC, partition_id=8).record_count == 0


def test_appended_partitions_get_a_row_and_deleted_ones_lose_it() -> None:
    appended = [TOPIC, PartitionsCreated("t", (9,)), RecordsAppended(7, 0, 5, 500, 1), RecordsAppended(9, 0, 1, 10, 1)]
    assert set(fold(PARTITIONS, appended)) == {"7", "9"}
    deleted = TopicDeleted("t", b"\x00" * 16, (7, 8))
    assert fold(PARTITIONS, [*appended, deleted]) == {"9": PartitionState(9, 0, 1, 10, 1, 1)}


def test_append_batch_puts_the_first_batch_at_offset_zero() -> None:
    assert append_batch(partition(TOPIC), 5, 500, 1_000) == RecordsAppended(7, 0, 5, 500, 1_000)


def test_append_batch_continues_at_the_end_of_the_log() -> None:
    state = partition(TOPIC, RecordsAppended(7, 0, 5, 500, 1_000), RecordsAppended(7, 5, 3, 300, 900))
    event = append_batch(state, 2, 200, 2_000, producer_id=4, producer_epoch=1, base_sequence=8, transactional=True)
    assert event == RecordsAppended(7, 8, 2, 200, 2_000, 4, 1, 8, True)
    assert event.last_offset == 9


def test_appends_fold_into_size_count_and_the_maximum_timestamp() -> None:
    state = partition(TOPIC, RecordsAppended(7, 0, 5, 500, 1_000), RecordsAppended(7, 5, 3, 300, 900))
    assert state == PartitionState(7, log_start_offset=0, next_offset=8, byte_size=800, batch_count=2,
                                   max_timestamp=1_000)
    assert state.record_count == 8


def test_appends_to_one_partition_leave_the_other_alone() -> None:
    assert partition(TOPIC, RecordsAppended(7, 0, 5, 500, 1), partition_id=8) == PartitionState(8)


@pytest.mark.parametrize("record_count", [0, -1])
def test_append_batch_refuses_an_empty_batch(record_count: int) -> None:
    with pytest.raises(ValueError, match="at least one record"):
        append_batch(partition(TOPIC), record_count, 0, 0)


def filled() -> PartitionState:
    return partition(TOPIC, RecordsAppended(7, 0, 10, 1_000, 5), RecordsAppended(7, 10, 10, 1_000, 6))


def test_truncate_moves_the_log_start_and_carries_the_removed_batches() -> None:
    event = truncate(filled(), 12, removed_batches=1, removed_bytes=1_000, reason="retention")
    assert event == LogTruncated(7, 12, 1, 1_000, "retention")
    after = partition(TOPIC, RecordsAppended(7, 0, 10, 1_000, 5), RecordsAppended(7, 10, 10, 1_000, 6), event)
    assert after == PartitionState(7, log_start_offset=12, next_offset=20, byte_size=1_000, batch_count=1,
                                   max_timestamp=6)
    assert after.record_count == 8


def test_truncate_to_minus_one_means_the_end_of_the_log() -> None:
    assert truncate(filled(), -1, 2, 2_000) == LogTruncated(7, 20, 2, 2_000, "delete-records")


def test_truncate_to_exactly_the_end_is_allowed() -> None:
    assert truncate(filled(), 20) == LogTruncated(7, 20)


@pytest.mark.parametrize("offset", [21, 1_000, -2])
def test_truncate_beyond_the_end_or_below_zero_is_out_of_range(offset: int) -> None:
    with pytest.raises(OffsetOutOfRange, match=f"before offset {offset}.*ends at 20"):
        truncate(filled(), offset)


def test_truncate_at_or_below_the_log_start_changes_nothing() -> None:
    state = partition(TOPIC, RecordsAppended(7, 0, 10, 1_000, 5), LogTruncated(7, 5))
    assert truncate(state, 5) is None
    assert truncate(state, 3) is None
    assert truncate(partition(TOPIC), -1) is None


def test_a_later_truncation_to_a_lower_start_never_moves_the_start_back() -> None:
    state = partition(TOPIC, RecordsAppended(7, 0, 10, 1_000, 5), LogTruncated(7, 8), LogTruncated(7, 4))
    assert state.log_start_offset == 8


def test_appends_after_truncation_continue_the_offsets() -> None:
    state = partition(TOPIC, RecordsAppended(7, 0, 10, 1_000, 5), LogTruncated(7, 10, 1, 1_000))
    assert append_batch(state, 1, 100, 7).base_offset == 10


def test_events_outside_the_partition_log_touch_no_entity() -> None:
    assert PARTITIONS.entity_keys(OffsetCommitted("g", "t", 0, 1)) == ()

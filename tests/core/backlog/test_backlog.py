"""Exact backlog per subscription: records, stored bytes and age, from a batch index and a position."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.core.backlog.backlog import Backlog, Position, backlog_of, slowest
from logwright.core.backlog.batch_index import BatchExtent, BatchIndex
from logwright.core.backlog.positions import CursorPositions, GroupPositions, PopPositions, from_pop, scan_topic
from logwright.core.backlog.tracker import BacklogTracker
from logwright.core.cursors.cursor import CURSORS, cursor_key
from logwright.core.events import OffsetCommitted, RecordsAcked, RecordsAcquired, SubscriptionCreated
from logwright.core.events.pop import CheckpointAcked, CheckpointCreated, PopCursorCreated
from logwright.core.groups.group_offsets import GROUP_OFFSETS
from logwright.core.pop.inflight import PopPartition, PopRun
from logwright.core.pop.inflight_fold import POP_INFLIGHT
from logwright.core.projection import fold
from logwright.core.rangeset import RangeSet


def index_of(*batches: tuple[int, int, int], start: int = 0) -> BatchIndex:
    """Batches of (record count, bytes, max timestamp), back to back from ``start``."""
    index = BatchIndex(7, start)
    offset = start
    for count, size, timestamp in batches:
        index.append(BatchExtent(offset, count, size, timestamp))
        offset += count
    return index


def test_bytes_are_the_stored_batches_from_the_position_on() -> None:
    index = index_of((10, 1000, 1), (5, 300, 2), (1, 70, 3))
    assert index.end_offset == 16
    assert index.bytes_from(0) == 1370
    assert index.bytes_from(9) == 1370, "a batch is pinned while any of its records is unsettled"
    assert index.bytes_from(10) == 370
    assert index.bytes_from(16) == 0
    assert index.bytes_within(10, 14) == 300
    assert index.bytes_within(10, 13) == 0, "a partly settled batch stays whole"


def test_backlog_counts_records_one_by_one_and_subtracts_settled_ranges() -> None:
    index = index_of((10, 1000, 100), (5, 300, 200), (1, 70, 300))
    position = Position("sub", "cursor", 7, 3, RangeSet.from_ranges([(10, 14)]))
    backlog = backlog_of(index, position)
    assert backlog == Backlog(records=16 - 3 - 5, bytes=1000 + 70, oldest_timestamp=100)
    assert backlog.age_ms(1100) == 1000


def test_log_start_and_an_empty_backlog() -> None:
    index = index_of((10, 1000, 100), (5, 300, 200))
    assert backlog_of(index, Position("g", "group", 7, 2), log_start_offset=10) == Backlog(5, 300, 200)
    assert backlog_of(index, Position("g", "group", 7, 15)) == Backlog()
    index.drop_below(10)
    assert index.start_offset == 10 and index.bytes_from(0) == 300


def test_positions_of_groups_and_of_share_cursors_holding_acquired_records() -> None:
    cursors = fold(CURSORS, [
        SubscriptionCreated("share", 7, "t", 0),
        RecordsAcquired("share", 7, "c1", ((0, 9),), 5000),
        RecordsAcked("share", 7, "c1", ((0, 1), (4, 4))),
    ])
    groups = fold(GROUP_OFFSETS, [OffsetCommitted("classic", "t", 0, 6)])
    index = index_of(*[(1, 100, i) for i in range(10)])
    [(share_key, share)] = scan_topic(CursorPositions(), cursors, "t", (7,))[7].items()
    [(classic_key, classic)] = scan_topic(GroupPositions(), groups, "t", (7,))[7].items()
    assert (share_key, classic_key) == (cursor_key("share", 7), "t/0/classic")
    assert CursorPositions().read(share_key, cursors[share_key], "t", 0, 7) == share
    assert GroupPositions().read(classic_key, groups[classic_key], "t", 0, 7, groups) == classic
    assert GroupPositions().read(classic_key, groups[classic_key], "t", 1, 7, groups) is None, "another partition's"
    assert GroupPositions().read(classic_key, groups[classic_key], "t", 0, 7) is None, "a row its head does not list"
    assert (share.first_unsettled, share.settled) == (2, RangeSet.of([4]))
    assert backlog_of(index, share).records == 7, "acquired but unacknowledged records are backlog"
    assert backlog_of(index, classic) == Backlog(4, 400, 6)
    worst = slowest([(share, backlog_of(index, share)), (classic, backlog_of(index, classic))])
    assert worst is not None and worst[0] == share
    assert scan_topic(CursorPositions(), cursors, "t", (8,)) == {}
    assert scan_topic(GroupPositions(), groups, "t", (8, 7)).keys() == {8}, "partition index 0 is id 8 there"


def test_compaction_of_the_index_keeps_answers() -> None:
    index = index_of(*[(1, 10, i) for i in range(3000)])
    index.drop_below(2500)
    assert len(index) == 500
    assert index.bytes_from(2600) == 4000
    assert index.timestamp_at(2999) == 2999
    index.append(BatchExtent(3000, 2, 50, 9999))
    assert index.bytes_within(3000, 3001) == 50


def test_a_pop_group_counts_what_it_holds_and_what_it_has_not_popped() -> None:
    tables = fold(POP_INFLIGHT, [
        PopCursorCreated("pop", 7, "t", 0),
        CheckpointCreated("pop", 7, "c1", (0, 1, 2, 3, 5), 6, 1000, 30_000, 1),
        CheckpointAcked("pop", 7, "c1", ((0, 1), (2, 1), (5, 1))),
    ])
    [(key, position)] = scan_topic(PopPositions(), tables, "t", (7,))[7].items()
    assert key == "7/pop" and position.describe() == "pop group 'pop'"
    assert (position.first_unsettled, position.settled) == (1, RangeSet.from_ranges([(2, 2), (4, 5)]))
    index = index_of(*[(1, 100, i) for i in range(10)])
    assert backlog_of(index, position) == Backlog(records=6, bytes=600, oldest_timestamp=1), "1 and 3 held, 6-9 new"


def test_an_index_read_from_inside_a_batch_counts_that_batch_whole() -> None:
    index = BatchIndex(7, 5)
    for extent in (BatchExtent(0, 10, 1000, 1), BatchExtent(10, 5, 300, 2)):
        index.append(extent)
    index.append(BatchExtent(12, 3, 99, 3))
    assert (len(index), index.end_offset) == (2, 15), "a replayed batch below the end is ignored"
    assert index.bytes_from(5) == 1300, "the batch holding the slowest position is pinned whole"
    assert index.timestamp_at(5) == 1
    assert backlog_of(index, Position("g", "group", 7, 5)) == Backlog(10, 1300, 1)


class CountedStates(dict[str, object]):
    """A projection's states that count the passes made over them."""

    passes = 0

    def items(self) -> Any:
        self.passes += 1
        return super().items()

    def __iter__(self) -> Iterator[str]:
        self.passes += 1
        return super().__iter__()


class TopicReads:
    """The tracker's reads of one topic ``t`` of 1,000 partitions (ids 100 on) and the states given."""

    PARTITION_IDS = tuple(range(100, 1100))

    def __init__(self, states: dict[str, CountedStates]) -> None:
        self.states = states

    def now_ms(self) -> int:
        return 0

    def broker_config(self, name: str) -> str:
        return "-1"

    def topic_names(self) -> tuple[str, ...]:
        return ("t",)

    def topic_configs(self, topic: str) -> Mapping[str, str]:
        return {}

    def partition_ids(self, topic: str) -> tuple[int, ...] | None:
        return self.PARTITION_IDS if topic == "t" else None

    def log_range(self, partition_id: int) -> tuple[int, int]:
        return 0, 0

    def entities(self, projection: str) -> Mapping[str, Any]:
        return self.states[projection]

    def batch_extents(self, partition_id: int, from_offset: int) -> Iterable[BatchExtent]:
        return ()


def test_the_positions_of_every_partition_of_a_topic_take_one_pass_over_each_projection() -> None:
    """A pass per partition held every client of a broker for seconds while an operator inspected a topic of
    many partitions beside 10,000 pop tables (hostile-values campaign, seed 204)."""
    ids = TopicReads.PARTITION_IDS
    pops = fold(POP_INFLIGHT, [PopCursorCreated(f"pop-{n}", ids[n % 1000], "t", 0) for n in range(3000)])
    cursors = fold(CURSORS, [SubscriptionCreated(f"share-{n}", ids[n], "t", n) for n in range(0, 1000, 2)])
    groups = fold(GROUP_OFFSETS, [OffsetCommitted("classic", "t", n, n) for n in range(0, 1000, 3)])
    reads = TopicReads({name: CountedStates(states) for name, states in
                        (("cursors", cursors), (GROUP_OFFSETS.name, groups), (POP_INFLIGHT.name, pops))})
    tracker = BacklogTracker(reads)
    found = {index: tracker.positions("t", index, partition_id) for index, partition_id in enumerate(ids)}
    assert [states.passes for states in reads.states.values()] == [1, 1, 1]
    assert sorted(position.subscription for position in found[6]) == ["classic", "pop-1006", "pop-2006", "pop-6",
                                                                        "share-6"]
    assert sorted(position.subscription for position in found[7]) == ["pop-1007", "pop-2007", "pop-7"]
    assert {position.partition_id for position in found[999]} == {ids[999]}
    assert sum(len(positions) for positions in found.values()) == 3000 + 500 + 334
    again = {index: tracker.positions("t", index, partition_id) for index, partition_id in enumerate(ids)}
    assert [sorted(again[index], key=repr) for index in again] == [sorted(found[index], key=repr) for index in found]
    assert [states.passes for states in reads.states.values()] == [1, 1, 1], \
        "then the entities found are read, no state scanned"
    late = PopCursorCreated("late", ids[7], "t", 0)
    reads.states[POP_INFLIGHT.name].update(fold(POP_INFLIGHT, [late]))
    tracker.on_commit([late])
    assert "late" in {position.subscription for position in tracker.positions("t", 7, ids[7])}, \
        "a pop group starting on a partition where nothing was located is read from its commit on"
    assert reads.states[POP_INFLIGHT.name].passes == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5)), max_size=10), st.integers(0, 6))
def test_a_pop_position_read_from_runs_is_the_one_read_from_every_entry(spans: list[tuple[int, int]],
                                                                       beyond: int) -> None:
    """A run of 1,000,000 records in flight took a second to expand at every admission."""
    runs, offset = [], 3
    for gap, width in spans:
        runs.append(PopRun(offset + gap, offset + gap + width, 1, 1, 10_000))
        offset += gap + width + 1
    state = PopPartition("g", 7, "t", offset + beyond, 1, tuple(runs))
    position = from_pop(state)
    first = state.consumed_offset()
    settled, at = [], first
    for entry in state.entries:
        if entry.offset > at:
            settled.append((at, entry.offset - 1))
        at = max(at, entry.offset + 1)
    if at < state.next_offset:
        settled.append((at, state.next_offset - 1))
    assert (position.first_unsettled, position.settled) == (first, RangeSet.from_ranges(settled))


@settings(max_examples=300)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 100), st.integers(0, 50)), min_size=1, max_size=30),
       st.data())
def test_an_index_extended_down_answers_as_one_read_from_the_lower_start(batches: list[tuple[int, int, int]],
                                                                        data: st.DataObject) -> None:
    extents: list[BatchExtent] = []
    offset = 0
    for count, size, timestamp in batches:
        extents.append(BatchExtent(offset, count, size, timestamp))
        offset += count
    end = offset

    def read_from(start: int) -> Iterator[BatchExtent]:  # as the store reads: from the batch holding ``start``
        return (extent for extent in extents if extent.end_offset > start)

    def built(start: int) -> BatchIndex:
        index = BatchIndex(7, start)
        for extent in read_from(start):
            index.append(extent)
        return index

    low = data.draw(st.integers(0, end))
    high = data.draw(st.integers(low, end))
    extended = built(high)
    dropped_to = data.draw(st.integers(high, end))  # a position that moved up first, then back down
    extended.drop_below(dropped_to)
    read: list[BatchExtent] = []

    def recorded(extents: Iterable[BatchExtent]) -> Iterator[BatchExtent]:
        for extent in extents:
            read.append(extent)
            yield extent

    extended.extend_down(low, recorded(read_from(low)))
    above = [extent for extent in read if extent.end_offset > dropped_to]
    assert len(above) <= 1, "only the batches below the kept ones are read (and the one that says where to stop)"
    fresh = built(low)
    assert (extended.start_offset, extended.end_offset, len(extended)) == (fresh.start_offset, fresh.end_offset,
                                                                            len(fresh))
    for offset in range(low, end + 2):
        assert extended.bytes_from(offset) == fresh.bytes_from(offset), offset
        assert extended.timestamp_at(offset) == fresh.timestamp_at(offset), offset
        assert extended.batch_end_after(offset) == fresh.batch_end_after(offset), offset
        assert extended.first_newer_than(offset, 25) == fresh.first_newer_than(offset, 25), offset
        for last in range(offset, end + 1):
            assert extended.bytes_within(offset, last) == fresh.bytes_within(offset, last), (offset, last)
    extended.append(BatchExtent(end, 3, 40, 60))
    fresh.append(BatchExtent(end, 3, 40, 60))
    assert extended.bytes_from(low) == fresh.bytes_from(low)

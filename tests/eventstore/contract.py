"""The EventStore contract: one suite every storage engine must pass.

To run it against an engine, subclass `EventStoreContract` in a ``test_*.py`` module as ``Test<Engine>`` and
implement `open_store` plus the two hooks that reach under the interface to damage or forget stored state
(`forget_projection`, `claim_coverage`). Everything else goes through the public store API.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from logwright.core import CORE_PROJECTIONS
from logwright.core.clock import ManualClock
from logwright.core.errors import CorruptState, OffsetOutOfRange
from logwright.core.events import Event, LogTruncated, OffsetCommitted, RecordsAppended, TopicDeleted
from logwright.core.groups.group_offsets import CommittedOffset, CommittedPartitions, OffsetsHead
from logwright.core.log.catalog import topic_key
from logwright.core.log.partition_log import PartitionState, partition_key
from logwright.core.projection import Projection, fold
from logwright.eventstore.codec import TypeRegistry, default_registry
from logwright.eventstore.interface import Durability, LoggedEvent, StoredBatch

from .support import batch_base_offset, new_topic, produce

BIG = 1 << 30


@dataclass(frozen=True, slots=True)
class EventCount:
    count: int


def _count_keys(event: Event) -> tuple[str, ...]:
    return (type(event).__name__,)


def _count(state: EventCount | None, event: Event, key: str) -> EventCount:
    return EventCount((state.count if state else 0) + 1)


EVENT_COUNTS: Projection[EventCount] = Projection("event_counts", _count_keys, _count)
"""A projection the stores have never seen: counts events by type."""


def with_event_counts() -> TypeRegistry:
    types = default_registry()
    types.register(EventCount, 9_001)
    return types


class Opener:
    """Opens stores of the engine under test and closes whatever a test left open."""

    def __init__(self, suite: EventStoreContract, path: Path, clock: ManualClock) -> None:
        self.suite, self.path, self.clock = suite, path, clock
        self.open: list[Any] = []

    def __call__(self, path: Path | None = None, **options: Any) -> Any:
        options.setdefault("clock", self.clock)
        store = self.suite.open_store(path or self.path, **options)
        self.open.append(store)
        return store

    def close(self, store: Any) -> None:
        self.open.remove(store)
        store.close()

    def reopen(self, store: Any, **options: Any) -> Any:
        self.close(store)
        return self(**options)

    def close_all(self) -> None:
        while self.open:
            self.close(self.open[-1])


class EventStoreContract:
    read_only_error: type[Exception] = Exception
    """What appending to a store opened read-only raises."""

    def open_store(self, path: Path, *, clock: ManualClock, durability: Durability = Durability.WAL,
                   read_only: bool = False, projections: Sequence[Projection[Any]] = CORE_PROJECTIONS,
                   types: TypeRegistry | None = None) -> Any:
        raise NotImplementedError

    def forget_projection(self, path: Path, projection: str) -> None:
        """With the store closed: remove every state row of ``projection`` and what it claims to cover."""
        raise NotImplementedError

    def claim_coverage(self, path: Path, projection: str, sequence: int) -> None:
        """With the store closed: make ``projection``'s state claim to cover events up to ``sequence``."""
        raise NotImplementedError

    # -- fixtures -------------------------------------------------------------------------------

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock(1_700_000_000_000)

    @pytest.fixture
    def opener(self, tmp_path: Path, clock: ManualClock) -> Iterator[Opener]:
        opener = Opener(self, tmp_path / "store", clock)
        yield opener
        opener.close_all()

    @pytest.fixture
    def store(self, opener: Opener) -> Any:
        return opener()

    @pytest.fixture
    def filled(self, store: Any) -> Any:
        """Topic ``t`` on partition 0 with batches at 0, 10 and 20 (10 records each, 161 bytes), committed."""
        new_topic(store, "t")
        for _ in range(3):
            produce(store, 0)
        store.commit()
        return store

    # -- appending and reading events -----------------------------------------------------------

    def test_a_new_store_is_empty(self, store: Any) -> None:
        assert (store.last_sequence, store.committed_sequence) == (0, 0)
        assert list(store.read_events()) == []
        assert store.state("partitions", "0") is None
        assert dict(store.entities("catalog")) == {}
        assert store.read_batches(0, 0, BIG) == []

    def test_append_stages_events_until_commit(self, store: Any, clock: ManualClock) -> None:
        events = [OffsetCommitted("g", "t", 0, 5), OffsetCommitted("g", "t", 1, 6)]
        assert store.append(events) == 2
        assert (store.last_sequence, store.committed_sequence) == (2, 0)
        assert list(store.read_events()) == []
        commit_time = clock.now_ms()
        clock.advance(5)
        store.commit()
        assert store.committed_sequence == 2
        assert list(store.read_events()) == [LoggedEvent(1, commit_time, events[0]),
                                             LoggedEvent(2, commit_time, events[1])]

    def test_each_append_is_stamped_with_the_clock_at_append(self, store: Any, clock: ManualClock) -> None:
        store.append([OffsetCommitted("g", "t", 0, 1)])
        clock.advance(250)
        store.append([OffsetCommitted("g", "t", 0, 2)])
        store.commit()
        assert [logged.time_ms for logged in store.read_events()] == [clock.now_ms() - 250, clock.now_ms()]

    def test_read_events_honours_from_and_to(self, store: Any) -> None:
        store.append([OffsetCommitted("g", "t", 0, offset) for offset in range(10)])
        store.commit()
        store.append([OffsetCommitted("g", "t", 0, 99)])
        assert [e.sequence for e in store.read_events(4, 6)] == [4, 5, 6]
        assert [e.sequence for e in store.read_events(8)] == [8, 9, 10]
        assert [e.sequence for e in store.read_events(0, 2)] == [1, 2]
        assert [e.sequence for e in store.read_events(11)] == [], "staged events are not readable"
        assert [e.sequence for e in store.read_events(5, 100)] == [5, 6, 7, 8, 9, 10]

    def test_state_is_visible_after_append_and_after_reopen(self, opener: Opener, store: Any) -> None:
        new_topic(store, "t", 2)
        produce(store, 1, record_count=4)
        expected = PartitionState(1, 0, 4, 161, 1, 1_000)
        assert store.state("partitions", partition_key(1)) == expected
        store.commit()
        reopened = opener.reopen(store)
        assert reopened.state("partitions", partition_key(1)) == expected
        assert reopened.state("catalog", topic_key("t")).partition_ids == (0, 1)
        assert (reopened.last_sequence, reopened.committed_sequence) == (2, 2)

    def test_entities_lists_every_entity_of_a_projection(self, store: Any) -> None:
        store.append([OffsetCommitted("a", "t", 0, 1), OffsetCommitted("b", "t", 0, 2)])
        entities = store.entities("committed_offsets")
        assert dict(entities) == {"#a": OffsetsHead(CommittedPartitions((("t", 0),))), "t/0/a": CommittedOffset(1),
                                  "#b": OffsetsHead(CommittedPartitions((("t", 0),))), "t/0/b": CommittedOffset(2)}
        with pytest.raises(TypeError):
            entities["c"] = CommittedOffset(3)  # type: ignore[index]

    def test_appends_continue_the_sequence_after_reopen(self, opener: Opener, store: Any) -> None:
        store.append([OffsetCommitted("g", "t", 0, 1)] * 3)
        store.commit()
        reopened = opener.reopen(store)
        assert reopened.append([OffsetCommitted("g", "t", 0, 4)]) == 4
        reopened.commit()
        assert [e.sequence for e in reopened.read_events()] == [1, 2, 3, 4]

    def test_an_empty_commit_changes_nothing(self, store: Any) -> None:
        calls: list[Sequence[LoggedEvent]] = []
        store.add_commit_listener(calls.append)
        store.commit()
        assert (store.committed_sequence, calls) == (0, [])

    # -- record batches -------------------------------------------------------------------------

    def test_batches_are_readable_only_after_commit(self, store: Any) -> None:
        new_topic(store, "t")
        produce(store, 0)
        assert store.read_batches(0, 0, BIG) == []
        store.commit()
        assert [batch_base_offset(b) for b in store.read_batches(0, 0, BIG)] == [0]

    @pytest.mark.parametrize(("start", "bases"), [(0, [0, 10, 20]), (9, [0, 10, 20]), (10, [10, 20]),
                                                  (15, [10, 20]), (29, [20])])
    def test_read_batches_starts_at_the_batch_holding_start_offset(self, filled: Any, start: int,
                                                                   bases: list[int]) -> None:
        assert [batch_base_offset(b) for b in filled.read_batches(0, start, BIG)] == bases

    def test_read_batches_returns_the_stored_bytes(self, store: Any) -> None:
        new_topic(store, "t")
        data = b"\x00" * 61 + b"payload"
        store.append([RecordsAppended(0, 0, 1, len(data), 0)], [StoredBatch(0, 0, data)])
        store.commit()
        assert store.read_batches(0, 0, BIG) == [data]

    @pytest.mark.parametrize(("max_bytes", "count"), [(1, 1), (160, 1), (161, 1), (162, 1), (321, 1), (322, 2),
                                                      (483, 3), (BIG, 3)])
    def test_read_batches_honours_max_bytes_but_returns_at_least_one(self, filled: Any, max_bytes: int,
                                                                     count: int) -> None:
        batches = filled.read_batches(0, 0, max_bytes)
        assert len(batches) == count
        assert all(len(batch) == 161 for batch in batches)

    @pytest.mark.parametrize(("end_offset", "bases"), [(0, [0]), (9, [0]), (10, [0, 10]), (25, [0, 10, 20]),
                                                       (1_000, [0, 10, 20])])
    def test_read_batches_stops_at_the_batch_holding_end_offset(self, filled: Any, end_offset: int,
                                                                bases: list[int]) -> None:
        assert [batch_base_offset(b) for b in filled.read_batches(0, 0, BIG, end_offset)] == bases

    def test_read_batches_keeps_partitions_apart(self, store: Any) -> None:
        new_topic(store, "a", 3)
        for _ in range(2):
            for partition_id in (0, 1, 2):
                produce(store, partition_id, payload_size=partition_id + 1)
        store.commit()
        for partition_id in (0, 1, 2):
            batches = store.read_batches(partition_id, 0, BIG)
            assert [batch_base_offset(b) for b in batches] == [0, 10]
            assert all(b.endswith(bytes([partition_id]) * (partition_id + 1)) for b in batches)
        assert [batch_base_offset(b) for b in store.read_batches(1, 15, BIG)] == [10]

    def test_read_batches_at_or_past_the_end_of_the_log_is_empty(self, filled: Any) -> None:
        assert filled.read_batches(0, 30, BIG) == []
        assert filled.read_batches(0, 1_000, BIG) == []

    def test_read_batches_of_an_unknown_partition_is_empty(self, filled: Any) -> None:
        assert filled.read_batches(1, 0, BIG) == []
        assert filled.read_batches(7_000, 0, BIG) == []

    # -- commit listeners -----------------------------------------------------------------------

    def test_commit_listeners_receive_exactly_the_committed_events_once(self, store: Any) -> None:
        first: list[list[LoggedEvent]] = []
        second: list[list[LoggedEvent]] = []
        store.add_commit_listener(lambda events: first.append(list(events)))
        store.add_commit_listener(lambda events: second.append(list(events)))
        store.append([OffsetCommitted("g", "t", 0, 1)])
        store.append([OffsetCommitted("g", "t", 0, 2), OffsetCommitted("g", "t", 0, 3)])
        assert first == []
        store.commit()
        store.commit()
        store.append([OffsetCommitted("g", "t", 0, 4)])
        store.commit()
        logged = list(store.read_events())
        assert first == [logged[:3], logged[3:]]
        assert second == first

    def test_a_listener_sees_the_commit_already_readable(self, store: Any) -> None:
        seen: list[tuple[int, list[int]]] = []
        store.add_commit_listener(lambda events: seen.append(
            (store.committed_sequence, [e.sequence for e in store.read_events(events[0].sequence)])))
        store.append([OffsetCommitted("g", "t", 0, 1)] * 2)
        store.commit()
        assert seen == [(2, [1, 2])]

    # -- recovery -------------------------------------------------------------------------------

    def test_reopen_rebuilds_the_same_state(self, opener: Opener, store: Any) -> None:
        new_topic(store, "t", 2)
        produce(store, 0)
        produce(store, 1, record_count=3)
        store.append([OffsetCommitted("g", "t", 1, 2)])
        store.commit()
        before = {p.name: dict(store.entities(p.name)) for p in CORE_PROJECTIONS}
        reopened = opener.reopen(store)
        assert {p.name: dict(reopened.entities(p.name)) for p in CORE_PROJECTIONS} == before
        events = [logged.event for logged in reopened.read_events()]
        assert {p.name: fold(p, events) for p in CORE_PROJECTIONS} == before

    def test_a_new_projection_is_rebuilt_from_the_log(self, opener: Opener, filled: Any) -> None:
        counted = {"projections": (*CORE_PROJECTIONS, EVENT_COUNTS), "types": with_event_counts()}
        reopened = opener.reopen(filled, **counted)
        assert dict(reopened.entities("event_counts")) == {"TopicCreated": EventCount(1),
                                                           "RecordsAppended": EventCount(3)}
        reopened.append([OffsetCommitted("g", "t", 0, 1)])
        reopened.commit()
        again = opener.reopen(reopened, **counted)
        assert dict(again.entities("event_counts")) == {"TopicCreated": EventCount(1),
                                                        "RecordsAppended": EventCount(3),
                                                        "OffsetCommitted": EventCount(1)}
        assert dict(again.entities("partitions")) == dict(filled.entities("partitions"))

    def test_a_forgotten_projection_is_rebuilt_from_the_log(self, opener: Opener, filled: Any) -> None:
        expected = dict(filled.entities("partitions"))
        opener.close(filled)
        self.forget_projection(opener.path, "partitions")
        reopened = opener()
        assert dict(reopened.entities("partitions")) == expected
        assert dict(opener.reopen(reopened).entities("partitions")) == expected

    def test_state_covering_more_than_the_log_is_corrupt(self, opener: Opener, filled: Any) -> None:
        opener.close(filled)
        self.claim_coverage(opener.path, "partitions", 99)
        with pytest.raises(CorruptState, match="partitions"):
            opener()

    # -- retention ------------------------------------------------------------------------------

    def test_truncate_removes_the_batches_wholly_below_the_new_start(self, filled: Any) -> None:
        sequence = filled.truncate(0, 15)
        assert sequence == filled.last_sequence
        filled.commit()
        assert filled.state("partitions", "0") == PartitionState(0, 15, 30, 2 * 161, 2, 1_000)
        assert list(filled.read_events(sequence))[0].event == LogTruncated(0, 15, 1, 161, "delete-records")
        assert [batch_base_offset(b) for b in filled.read_batches(0, 0, BIG)] == [10, 20]
        assert [batch_base_offset(b) for b in filled.read_batches(0, 12, BIG)] == [10, 20]

    def test_truncate_at_a_batch_boundary_keeps_the_batch_starting_there(self, filled: Any) -> None:
        filled.truncate(0, 20, reason="retention")
        filled.commit()
        assert [batch_base_offset(b) for b in filled.read_batches(0, 0, BIG)] == [20]
        assert filled.state("partitions", "0") == PartitionState(0, 20, 30, 161, 1, 1_000)
        assert list(filled.read_events())[-1].event == LogTruncated(0, 20, 2, 322, "retention")

    def test_truncate_to_minus_one_empties_the_log_and_appends_continue(self, filled: Any) -> None:
        filled.truncate(0, -1)
        filled.commit()
        assert filled.read_batches(0, 0, BIG) == []
        assert filled.state("partitions", "0") == PartitionState(0, 30, 30, 0, 0, 1_000)
        assert list(filled.read_events())[-1].event == LogTruncated(0, 30, 3, 483)
        assert produce(filled, 0).base_offset == 30
        filled.commit()
        assert [batch_base_offset(b) for b in filled.read_batches(0, 0, BIG)] == [30]

    @pytest.mark.parametrize("offset", [31, 10_000, -2])
    def test_truncate_beyond_the_end_raises_and_logs_nothing(self, filled: Any, offset: int) -> None:
        last = filled.last_sequence
        with pytest.raises(OffsetOutOfRange):
            filled.truncate(0, offset)
        filled.commit()
        assert filled.last_sequence == last
        assert len(filled.read_batches(0, 0, BIG)) == 3

    def test_truncate_that_does_not_move_the_start_logs_nothing(self, filled: Any) -> None:
        filled.truncate(0, 10)
        filled.commit()
        last = filled.last_sequence
        assert filled.truncate(0, 10) is None
        assert filled.truncate(0, 3) is None
        assert filled.last_sequence == last

    def test_a_partition_without_a_row_truncates_as_an_empty_one(self, filled: Any) -> None:
        """Nothing was appended to it: its log start stays at 0, and an offset past its end is out of range."""
        last = filled.last_sequence
        assert filled.truncate(5, 0) is None and filled.truncate(5, -1) is None
        with pytest.raises(OffsetOutOfRange):
            filled.truncate(5, 1)
        assert filled.last_sequence == last

    def test_truncation_is_kept_across_reopen_and_counts_stay_exact(self, opener: Opener, filled: Any) -> None:
        filled.truncate(0, 11)
        produce(filled, 0, record_count=5)
        filled.commit()
        filled.truncate(0, 25)
        filled.commit()
        reopened = opener.reopen(filled)
        assert [batch_base_offset(b) for b in reopened.read_batches(0, 0, BIG)] == [20, 30]
        assert reopened.state("partitions", "0") == PartitionState(0, 25, 35, 2 * 161, 2, 1_000)
        events = [logged.event for logged in reopened.read_events()]
        assert [e for e in events if isinstance(e, LogTruncated)] == [LogTruncated(0, 11, 1, 161),
                                                                       LogTruncated(0, 25, 1, 161)]

    # -- topic deletion -------------------------------------------------------------------------

    def test_deleting_a_topic_removes_its_partitions_batches(self, opener: Opener, store: Any) -> None:
        doomed = new_topic(store, "doomed", 2)
        new_topic(store, "kept", 1)
        for partition_id in (0, 1, 2):
            produce(store, partition_id)
        store.commit()
        store.append([TopicDeleted("doomed", doomed.topic_id, doomed.partition_ids)])
        store.commit()
        assert store.read_batches(0, 0, BIG) == [] and store.read_batches(1, 0, BIG) == []
        assert store.state("partitions", "0") is None and store.state("catalog", topic_key("doomed")) is None
        assert len(store.read_batches(2, 0, BIG)) == 1
        reopened = opener.reopen(store)
        assert reopened.read_batches(0, 0, BIG) == [] and len(reopened.read_batches(2, 0, BIG)) == 1

    # -- checkpoints ----------------------------------------------------------------------------

    def test_a_checkpoint_holds_exactly_the_committed_events(self, opener: Opener, filled: Any,
                                                             tmp_path: Path) -> None:
        filled.append([OffsetCommitted("g", "t", 0, 5)])
        filled.commit()
        produce(filled, 0)
        filled.append([OffsetCommitted("g", "t", 0, 99)])
        filled.checkpoint(str(tmp_path / "checkpoint"))
        committed = list(filled.read_events())
        copy = opener(tmp_path / "checkpoint")
        assert list(copy.read_events()) == committed
        assert copy.last_sequence == copy.committed_sequence == committed[-1].sequence
        events = [logged.event for logged in committed]
        for projection in CORE_PROJECTIONS:
            assert dict(copy.entities(projection.name)) == fold(projection, events)
        assert [batch_base_offset(b) for b in copy.read_batches(0, 0, BIG)] == [0, 10, 20]

    # -- read-only and durability ---------------------------------------------------------------

    def test_a_read_only_store_sees_the_data_and_refuses_appends(self, opener: Opener, filled: Any) -> None:
        committed = list(filled.read_events())
        opener.close(filled)
        viewer = opener(read_only=True)
        assert list(viewer.read_events()) == committed
        assert viewer.state("partitions", "0").next_offset == 30
        assert len(viewer.read_batches(0, 0, BIG)) == 3
        with pytest.raises(self.read_only_error):
            viewer.append([OffsetCommitted("g", "t", 0, 1)])
        with pytest.raises(self.read_only_error):
            viewer.commit()
        opener.close(viewer)
        assert list(opener().read_events()) == committed

    def test_a_read_only_store_opens_beside_a_live_writer(self, opener: Opener, filled: Any) -> None:
        viewer = opener(read_only=True)
        assert viewer.committed_sequence == filled.committed_sequence
        assert viewer.state("partitions", "0") == filled.state("partitions", "0")

    @pytest.mark.parametrize("durability", list(Durability))
    def test_each_durability_writes_and_reopens(self, opener: Opener, durability: Durability) -> None:
        store = opener(durability=durability)
        new_topic(store, "t")
        for _ in range(5):
            produce(store, 0)
            store.append([OffsetCommitted("g", "t", 0, store.state("partitions", "0").next_offset)])
            store.commit()
        reopened = opener.reopen(store, durability=durability)
        assert reopened.committed_sequence == 11
        assert [batch_base_offset(b) for b in reopened.read_batches(0, 0, BIG)] == [0, 10, 20, 30, 40]
        assert reopened.state("committed_offsets", "t/0/g").offset == 50

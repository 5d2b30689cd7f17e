"""The compaction decisions without I/O: segment rolls, what is cleanable when, which records a pass keeps."""

from __future__ import annotations

import msgpack
import pytest
from logwright.core.compaction.cleanable import PartitionView, choose, due_at
from logwright.core.compaction.offset_map import OffsetMap, capacity_for
from logwright.core.compaction.retention import BatchFacts, Outcome, TransactionTracker, judge
from logwright.core.compaction.segments import MAXIMA_KEPT, SegmentModel
from logwright.core.compaction.settings import (
    CompactionSettings,
    cleanup_policy,
    compaction_lags_agree,
    refuse_delete_records,
)
from logwright.core.compaction.state import CLEANER_CHECKPOINTS, CleanerCheckpoint
from logwright.core.config.configs import default_registry
from logwright.core.errors import InvalidConfig, PolicyViolation
from logwright.core.events import TopicDeleted
from logwright.core.events.compaction import NOT_RECORDED, PartitionCompacted
from logwright.core.log.record_keys import KeyedRecord
from logwright.core.projection import fold
from logwright.eventstore.codec import default_registry as default_type_registry

MB = 1 << 20


def settings(**overrides: int | float) -> CompactionSettings:
    values: dict[str, int | float] = dict(segment_bytes=MB, segment_ms=100, min_compaction_lag_ms=0,
                                          max_compaction_lag_ms=2**63 - 1, min_cleanable_dirty_ratio=0.5,
                                          delete_retention_ms=1000)
    values.update(overrides)
    return CompactionSettings(**values)  # type: ignore[arg-type]


def model_of(batches: list[tuple[int, int, int]], config: CompactionSettings) -> SegmentModel:
    """Batches of one record each: (offset, bytes, timestamp)."""
    model = SegmentModel()
    for offset, size, timestamp in batches:
        model.append(offset, offset + 1, size, timestamp, config)
    return model


def view(end: int, size: int, cleaned_to: int = 0, stable: int | None = None, horizon: int = -1) -> PartitionView:
    return PartitionView(0, end, size, end if stable is None else stable, cleaned_to, horizon)


# -- segments -----------------------------------------------------------------------------------------------


def test_a_segment_rolls_when_the_next_batch_is_more_than_segment_ms_newer_than_its_first() -> None:
    model = model_of([(0, 100, 1000), (1, 100, 1100), (2, 100, 1101), (3, 100, 1300)], settings())
    assert [(s.base_offset, s.next_offset) for s in model.segments] == [(0, 2), (2, 3), (3, 4)]


def test_a_segment_rolls_before_it_would_pass_segment_bytes() -> None:
    model = model_of([(0, MB - 10, 1), (1, 10, 1), (2, 1, 1)], settings(segment_ms=10**9))
    assert [s.base_offset for s in model.segments] == [0, 2]


def test_max_compaction_lag_rolls_segments_of_compacted_topics_too() -> None:
    config = settings(segment_ms=10**9, max_compaction_lag_ms=50)
    assert config.roll_ms == 50
    assert [s.base_offset for s in model_of([(0, 1, 0), (1, 1, 51)], config).segments] == [0, 1]


def test_forgetting_below_keeps_the_segment_holding_the_offset() -> None:
    model = model_of([(0, 1, 0), (1, 1, 200), (2, 1, 201), (3, 1, 400)], settings())
    model.forget_below(2)
    assert [s.base_offset for s in model.segments] == [1, 3]


# -- what is cleanable --------------------------------------------------------------------------------------


def test_the_active_segment_is_never_cleanable() -> None:
    config = settings(min_cleanable_dirty_ratio=0.0)
    model = model_of([(0, 100, 0), (1, 100, 1)], config)
    assert choose(view(2, 200), model, config, 10**6) is None


def test_closed_dirty_segments_are_cleaned_once_the_dirty_ratio_is_above_the_minimum() -> None:
    config = settings()
    model = model_of([(0, 100, 0), (1, 100, 200), (2, 100, 400)], config)
    choice = choose(view(3, 300), model, config, 1000)
    assert choice is not None and (choice.first_dirty_offset, choice.first_uncleanable_offset) == (0, 2)
    assert choice.dirty_ratio == 1.0


def test_a_dirty_ratio_at_the_minimum_is_not_enough() -> None:
    config = settings()
    model = model_of([(10, 100, 0), (11, 100, 200)], config)
    assert choose(view(12, 300, cleaned_to=10), model, config, 1000) is None  # 100 clean, 100 dirty: 0.5
    model = model_of([(10, 101, 0), (11, 100, 200)], config)
    assert choose(view(12, 301, cleaned_to=10), model, config, 1000) is not None


def test_min_compaction_lag_holds_back_segments_with_new_records_until_due() -> None:
    config = settings(min_compaction_lag_ms=500)
    model = model_of([(0, 100, 0), (1, 100, 300), (2, 100, 600)], config)
    first = choose(view(3, 300), model, config, 600)
    assert first is not None and first.first_uncleanable_offset == 1
    assert choose(view(3, 300), model, config, 799) is not None
    assert due_at(view(3, 300, cleaned_to=1), model, config, 600) == 800


def test_max_compaction_lag_forces_a_pass_below_the_dirty_ratio() -> None:
    config = settings(max_compaction_lag_ms=1000, min_cleanable_dirty_ratio=0.99)
    model = model_of([(5, 10, 100), (6, 10, 1100), (7, 10, 2100)], config)
    assert choose(view(8, 10_000, cleaned_to=5), model, config, 1100) is None
    assert due_at(view(8, 10_000, cleaned_to=5), model, config, 1100) == 1101
    choice = choose(view(8, 10_000, cleaned_to=5), model, config, 1101)
    assert choice is not None and choice.forced


def test_an_open_transaction_bounds_the_cleanable_range() -> None:
    config = settings()
    model = model_of([(0, 100, 0), (1, 100, 200), (2, 100, 400), (3, 100, 600)], config)
    choice = choose(view(4, 400, stable=1), model, config, 1000)
    assert choice is not None and choice.first_uncleanable_offset == 1


def test_a_passed_delete_horizon_makes_the_partition_due() -> None:
    config = settings(min_cleanable_dirty_ratio=0.9)
    model = model_of([(9, 10, 0)], config)
    assert choose(view(10, 500, cleaned_to=9, horizon=5000), model, config, 4999) is None
    assert due_at(view(10, 500, cleaned_to=9, horizon=5000), model, config, 4999) == 5000
    assert choose(view(10, 500, cleaned_to=9, horizon=5000), model, config, 5000) is not None


# -- which records stay -------------------------------------------------------------------------------------


def record(offset: int, key: bytes | None, tombstone: bool = False) -> KeyedRecord:
    return KeyedRecord(offset, 0, key, tombstone)


def batch(*records: KeyedRecord, horizon: int | None = None, producer_id: int = -1, transactional: bool = False,
          control: bool = False) -> BatchFacts:
    return BatchFacts.of_records(records[0].offset, records[-1].offset, producer_id, transactional, control, horizon,
                                 records)


def offsets(*pairs: tuple[bytes, int]) -> OffsetMap:
    mapped = OffsetMap(100)
    for key, offset in pairs:
        mapped.put(key, offset)
    return mapped


def test_only_the_latest_record_per_key_stays_and_offsets_are_kept() -> None:
    mapped = offsets((b"a", 2), (b"b", 1))
    verdict = judge(batch(record(0, b"a"), record(1, b"b"), record(2, b"a")), mapped, TransactionTracker(), 0, 10)
    assert (verdict.outcome, verdict.kept, verdict.removed_records) == (Outcome.REWRITE, (1, 2), 1)


def test_a_batch_with_nothing_left_is_deleted_and_an_untouched_one_kept() -> None:
    mapped = offsets((b"a", 5), (b"b", 1))
    assert judge(batch(record(0, b"a")), mapped, TransactionTracker(), 0, 10).outcome is Outcome.DELETE
    assert judge(batch(record(1, b"b")), mapped, TransactionTracker(), 0, 10).outcome is Outcome.KEEP


def test_keys_missing_from_the_map_stay_and_keyless_records_go() -> None:
    mapped = offsets((b"a", 1))
    verdict = judge(batch(record(0, None), record(1, b"a"), record(2, b"b")), mapped, TransactionTracker(), 0, 10)
    assert verdict.kept == (1, 2)


def test_an_expired_tombstone_goes_in_a_pass_with_nothing_dirty() -> None:
    gone = judge(batch(record(3, b"a", tombstone=True), horizon=10), OffsetMap(10), TransactionTracker(), 10, 5)
    assert gone.outcome is Outcome.DELETE


def test_a_tombstone_gets_a_delete_horizon_then_goes_once_it_passed() -> None:
    mapped = offsets((b"a", 0))
    first = judge(batch(record(0, b"a", tombstone=True)), mapped, TransactionTracker(), 100, 1000)
    assert (first.outcome, first.delete_horizon_ms) == (Outcome.REWRITE, 1100)
    kept = judge(batch(record(0, b"a", tombstone=True), horizon=1100), mapped, TransactionTracker(), 1099, 1000)
    assert kept.outcome is Outcome.KEEP
    gone = judge(batch(record(0, b"a", tombstone=True), horizon=1100), mapped, TransactionTracker(), 1100, 1000)
    assert gone.outcome is Outcome.DELETE


def test_aborted_records_go_and_their_marker_waits_for_its_horizon() -> None:
    tracker = TransactionTracker(((7, 0, 1),))
    data = batch(record(0, b"a"), producer_id=7, transactional=True)
    assert judge(data, offsets((b"a", 0)), tracker, 0, 100).outcome is Outcome.DELETE
    abort = batch(KeyedRecord(1, 0, b"\x00\x00\x00\x00", False), producer_id=7, transactional=True, control=True)
    assert judge(abort, offsets(), tracker, 0, 100).outcome is Outcome.KEEP  # its batch was still there
    later = TransactionTracker(((7, 0, 1),))
    first = judge(abort, offsets(), later, 0, 100)
    assert (first.outcome, first.delete_horizon_ms) == (Outcome.REWRITE, 100)
    stamped = batch(KeyedRecord(1, 0, b"\x00\x00\x00\x00", False), producer_id=7, transactional=True, control=True,
                    horizon=100)
    assert judge(stamped, offsets(), TransactionTracker(((7, 0, 1),)), 100, 100).outcome is Outcome.DELETE


def test_a_commit_marker_stays_while_its_transaction_has_records() -> None:
    tracker = TransactionTracker()
    judge(batch(record(0, b"a"), producer_id=3, transactional=True), offsets((b"a", 0)), tracker, 0, 10)
    commit = batch(KeyedRecord(1, 0, b"\x00\x00\x00\x01", False), producer_id=3, transactional=True, control=True,
                   horizon=0)
    assert judge(commit, offsets(), tracker, 50, 10).outcome is Outcome.KEEP


def test_the_offset_map_is_bounded_but_always_takes_one_batch() -> None:
    mapped = OffsetMap(2)
    assert mapped.fits(5)
    for index in range(3):
        mapped.put(b"k%d" % index, index)
    assert not mapped.fits(1) and len(mapped) == 3 and mapped.get(b"k2") == 2 and mapped.get(b"k9") is None
    assert capacity_for(134217728) == 986895


# -- configs and the checkpoint -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["compact", "delete", "compact,delete", "delete, compact", "", " "])
def test_cleanup_policies_kafka_accepts(value: str) -> None:
    """As Kafka 4.4 (tests/integration/test_topic_config_keys.py): blank is the empty list, infinite retention."""
    assert cleanup_policy(value) is None


@pytest.mark.parametrize("value", ["compacted", "compact,none", ",", " , ", "compact,", ",delete", "COMPACT"])
def test_cleanup_policies_kafka_refuses(value: str) -> None:
    assert cleanup_policy(value) is not None


@pytest.mark.parametrize(("value", "refused"), [("compact", True), (" compact ", True), ("compact,compact", True),
                                               ("compact,delete", False), ("delete, compact", False),
                                               ("delete", False), ("", False), (None, False)])
def test_records_are_deleted_unless_the_policy_is_compact_only(value: str | None, refused: bool) -> None:
    """Kafka 4.4's DeleteRecords refusal (tests/integration/test_admin.py runs it on both brokers)."""
    if refused:
        with pytest.raises(PolicyViolation, match="cleanup.policy"):
            refuse_delete_records(value)
    else:
        refuse_delete_records(value)


def test_min_compaction_lag_above_max_is_refused_together() -> None:
    assert compaction_lags_agree({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}) is not None
    registry = default_registry()
    with pytest.raises(InvalidConfig, match="conflict"):
        registry.check_together("topic", {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
                                ["max.compaction.lag.ms"])
    with pytest.raises(InvalidConfig, match="segment.bytes"):
        registry.validate("topic", [("segment.bytes", "1048575")])


def test_the_checkpoint_follows_the_last_slice_of_each_pass_and_goes_with_the_topic() -> None:
    events = [PartitionCompacted(4, 0, 10, 3, 1, 300), PartitionCompacted(4, 10, 20, 1, 0, 50, 20, 9000)]
    assert fold(CLEANER_CHECKPOINTS, events) == {"4": CleanerCheckpoint(20, 9000, 1)}
    assert fold(CLEANER_CHECKPOINTS, [*events, TopicDeleted("t", b"\x00" * 16, (4,))]) == {}


def test_a_segment_keeps_the_first_batch_with_its_largest_timestamp() -> None:
    """Kafka's offsetOfMaxTimestampSoFar moves only on a strictly larger timestamp: a tie keeps the earlier."""
    config = settings(segment_ms=10**9)
    model = model_of([(0, 1, 500), (1, 1, 900), (2, 1, 900), (3, 1, 100), (4, 1, 1000)], config)
    assert [s.largest for s in model.segments] == [(1000, 4)]
    tied = model_of([(0, 1, 500), (1, 1, 900), (2, 1, 900), (3, 1, 100)], config)
    assert [s.largest for s in tied.segments] == [(900, 1)]
    assert tied.segments[0].maxima == [(900, 1), (900, 2), (100, 3)]


def test_a_pass_ending_inside_a_segment_leaves_the_largest_of_its_rest() -> None:
    """A pass ending at offset 2 (an open transaction there) recorded what it kept below; the segment's largest
    from 2 on is 700 at 2, whatever became of 900 at 0."""
    model = model_of([(0, 1, 900), (1, 1, 500), (2, 1, 700), (3, 1, 300), (4, 1, 300)], settings(segment_ms=10**9))
    model.forget_below(2)
    assert [s.largest for s in model.segments] == [(700, 2)]
    model.forget_below(3)
    assert model.segments[0].maxima == [(300, 3), (300, 4)]
    model.append(5, 6, 1, 800, settings(segment_ms=10**9))
    assert model.segments[0].maxima == [(800, 5)]


def test_falling_timestamps_keep_a_bounded_list_and_the_largest() -> None:
    model = model_of([(offset, 1, 10_000 - offset) for offset in range(MAXIMA_KEPT + 50)], settings(segment_ms=10**9))
    (segment,) = model.segments
    assert len(segment.maxima) == MAXIMA_KEPT
    assert segment.largest == (10_000, 0) and segment.maxima[-1] == (10_000 - MAXIMA_KEPT - 49, MAXIMA_KEPT + 49)


def test_a_checkpoint_of_an_older_build_does_not_know_its_kept_maximum() -> None:
    """Version 1 rows and events (before the kept maximum was recorded) read as NOT_RECORDED, not as 'none
    kept', so ListOffsets MAX_TIMESTAMP searches the folded maximum until the next pass records it."""
    codec = default_type_registry()
    old = codec.decode(msgpack.packb([1200, 1, 40, -1, 3]), "a version-1 checkpoint row")
    assert isinstance(old, CleanerCheckpoint)
    assert (old.cleaned_to, old.passes, old.kept_max_known) == (40, 3, False)
    event = codec.decode(msgpack.packb([PartitionCompacted.TAG, 1, 0, 0, 40, 5, 1, 100, 40, -1]), "a v1 event")
    assert event == PartitionCompacted(0, 0, 40, 5, 1, 100, 40, -1, NOT_RECORDED, NOT_RECORDED)
    assert CleanerCheckpoint(40, -1, 1, 900, 8).kept_max_known

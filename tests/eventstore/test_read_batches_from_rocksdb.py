"""`read_batches` answered by RocksDB itself (no tail cache), from a batch's base offset and from inside a batch.

A read at a batch's base offset (a consumer reading on) takes a plain seek; one inside a batch needs the batch
before the key (``seek_for_prev``). Both must find the batch holding the offset (issue 18).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.core.events.compaction import PartitionCompacted
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.read_ahead import ReadAhead
from logwright.eventstore.rocksdb import RocksEventStore

from tests.eventstore.support import batch_base_offset, fake_batch, new_topic, produce

BIG = 1 << 30


@pytest.fixture
def uncached(tmp_path: Path) -> Iterator[RocksEventStore]:
    """Partitions 0 and 1 of topic ``t``, batches at 0, 10 and 20 on partition 0 and at 0 on partition 1."""
    store = RocksEventStore(tmp_path, tail_cache_bytes=0)
    new_topic(store, "t", partitions=2)
    for _ in range(3):
        produce(store, 0)
    produce(store, 1)
    store.commit()
    yield store
    store.close()


@pytest.mark.parametrize(("start", "bases"), [(0, [0, 10, 20]), (9, [0, 10, 20]), (10, [10, 20]), (11, [10, 20]),
                                              (20, [20]), (29, [20]), (30, [])])
def test_reads_start_at_the_batch_holding_the_offset(uncached: RocksEventStore, start: int,
                                                     bases: list[int]) -> None:
    assert [batch_base_offset(batch) for batch in uncached.read_batches(0, start, BIG)] == bases


def test_a_read_at_a_base_offset_keeps_to_max_bytes_and_to_its_partition(uncached: RocksEventStore) -> None:
    one = len(uncached.read_batches(0, 10, 1)[0])
    assert [batch_base_offset(batch) for batch in uncached.read_batches(0, 10, one)] == [10]
    assert [batch_base_offset(batch) for batch in uncached.read_batches(0, 20, BIG)] == [20]
    assert [batch_base_offset(batch) for batch in uncached.read_batches(1, 0, BIG)] == [0]
    assert uncached.read_batches(1, 10, BIG) == []


def _read_on(store: RocksEventStore, partition_id: int, max_bytes: int) -> list[list[int]]:
    """A consumer reading on from offset 0: the base offsets of each read's batches."""
    reads, offset = [], 0
    while batches := store.read_batches(partition_id, offset, max_bytes):
        reads.append([batch_base_offset(batch) for batch in batches])
        offset = batch_base_offset(batches[-1]) + 10
    return reads


def test_reading_on_with_room_for_one_batch_takes_each_batch_once(uncached: RocksEventStore) -> None:
    """Each read loads the batch after its last to learn that it does not fit; the next read starts with it."""
    one = len(uncached.read_batches(0, 0, 1)[0])
    assert _read_on(uncached, 0, one + 1) == [[0], [10], [20]]
    assert _read_on(uncached, 0, 2 * one) == [[0, 10], [20]]
    assert _read_on(uncached, 1, one) == [[0]]


def test_a_batch_read_ahead_is_not_served_once_truncated(uncached: RocksEventStore) -> None:
    one = len(uncached.read_batches(0, 0, 1)[0])
    assert [batch_base_offset(batch) for batch in uncached.read_batches(0, 0, one + 1)] == [0]  # 10 read ahead
    uncached.truncate(0, 20)
    uncached.commit()
    assert [batch_base_offset(batch) for batch in uncached.read_batches(0, 10, BIG)] == [20]


def test_a_batch_read_ahead_is_not_served_once_compaction_rewrote_it(uncached: RocksEventStore) -> None:
    one = len(uncached.read_batches(0, 0, 1)[0])
    assert [batch_base_offset(batch) for batch in uncached.read_batches(0, 0, one + 1)] == [0]  # 10 read ahead
    rewritten = fake_batch(10, 10, b"\xee" * 50)
    uncached.rewrite_batches(PartitionCompacted(0, 10, 20, 0, 0, 0), [StoredBatch(0, 10, rewritten)], [])
    uncached.commit()
    assert uncached.read_batches(0, 10, 1) == [rewritten]


def test_read_ahead_keeps_to_its_budget_oldest_first_and_forgets_a_partition() -> None:
    ahead = ReadAhead(max_bytes=10)
    ahead.keep(0, 0, b"a" * 4)
    ahead.keep(0, 5, b"b" * 4)
    ahead.keep(1, 0, b"c" * 4)
    assert ahead.take(0, 0) is None, "the oldest went to make room"
    ahead.keep(2, 0, b"d" * 11)
    assert ahead.take(2, 0) is None, "larger than the whole budget: not kept"
    ahead.drop(0)
    assert ahead.take(0, 5) is None
    assert ahead.take(1, 0) == b"c" * 4
    assert ahead.take(1, 0) is None, "taken once"


AHEAD_STEPS = st.lists(st.tuples(st.sampled_from(["keep", "take", "drop"]), st.integers(0, 3), st.integers(0, 4),
                                 st.integers(1, 6)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(steps=AHEAD_STEPS)
def test_read_ahead_is_a_budgeted_oldest_first_map_whatever_is_kept_taken_or_dropped(
        steps: list[tuple[str, int, int, int]]) -> None:
    """Against a plain model: an insertion-ordered dict whose oldest entries leave to make room."""
    ahead, model = ReadAhead(max_bytes=10), dict[tuple[int, int], bytes]()
    for action, partition_id, base_offset, size in steps:
        if action == "keep":
            data = bytes([base_offset]) * size
            ahead.keep(partition_id, base_offset, data)
            model.pop((partition_id, base_offset), None)
            while model and sum(map(len, model.values())) + size > 10:
                del model[next(iter(model))]
            model[(partition_id, base_offset)] = data
        elif action == "take":
            assert ahead.take(partition_id, base_offset) == model.pop((partition_id, base_offset), None)
        else:
            ahead.drop(partition_id)
            model = {key: data for key, data in model.items() if key[0] != partition_id}
    for (partition_id, base_offset), data in list(model.items()):
        assert ahead.take(partition_id, base_offset) == data
    assert all(ahead.take(p, b) is None for p in range(4) for b in range(5))

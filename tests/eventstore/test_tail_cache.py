"""The tail cache answers `read_batches` exactly as RocksDB does, whatever was appended, evicted or truncated."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logwright.core.log.catalog import topic_key
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.tail_cache import TailCache

from .support import batch_base_offset, new_topic, partition_state, produce

Step = tuple[str, int, int]

STEPS = st.lists(st.one_of(
    st.tuples(st.just("produce"), st.integers(0, 1), st.integers(1, 20)),
    st.tuples(st.just("commit"), st.just(0), st.just(0)),
    st.tuples(st.just("truncate"), st.integers(0, 1), st.integers(0, 40)),
), min_size=1, max_size=40)


def _read_everything(store: RocksEventStore, partition_id: int, end: int) -> list[list[bytes]]:
    return [store.read_batches(partition_id, start, max_bytes, end_offset)
            for start in range(end + 2) for max_bytes in (1, 150, 400, 10_000)
            for end_offset in (None, max(end - 3, 0), end)]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=STEPS, budget=st.sampled_from([0, 300, 1_000, 1 << 20]))
def test_reads_from_the_cache_are_the_reads_from_rocksdb(steps: list[Step], budget: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cached = RocksEventStore(Path(tmp) / "cached", tail_cache_bytes=budget)
        plain = RocksEventStore(Path(tmp) / "plain", tail_cache_bytes=0)
        try:
            stores = (cached, plain)
            for store in stores:
                new_topic(store, "t", 2)
                store.commit()
            partition_ids = cached.state("catalog", topic_key("t")).partition_ids
            for action, partition, amount in steps:
                partition_id = partition_ids[partition]
                for store in stores:
                    if action == "produce":
                        produce(store, partition_id, record_count=amount, payload_size=amount * 7)
                    elif action == "commit":
                        store.commit()
                    else:
                        next_offset = partition_state(store, partition_id).next_offset
                        store.truncate(partition_id, min(amount, next_offset))
            for store in stores:
                store.commit()
            for partition_id in partition_ids:
                end = partition_state(plain, partition_id).next_offset
                assert _read_everything(cached, partition_id, end) == _read_everything(plain, partition_id, end)
        finally:
            cached.close()
            plain.close()


def test_the_budget_bounds_the_cache_and_the_oldest_batches_leave_first() -> None:
    cache = TailCache(budget_bytes=250)
    for base in range(10):
        cache.add(7, base * 2, base * 2 + 1, bytes([base]) * 100)
    assert cache.size_bytes == 200
    assert cache.read(7, 15, 1_000, None) is None
    assert cache.read(7, 16, 1_000, None) == [bytes([8]) * 100, bytes([9]) * 100]
    assert cache.read(7, 19, 1_000, 18) == [bytes([9]) * 100]
    cache.drop(7)
    assert cache.size_bytes == 0 and cache.read(7, 18, 1_000, None) is None


def test_a_batch_held_in_its_request_frame_goes_to_sockets_as_is_and_to_readers_as_bytes_copied_once() -> None:
    cache = TailCache(budget_bytes=1_000)
    frame = bytearray(b"f" * 10 + b"b" * 100)
    held = memoryview(frame)[10:]
    cache.add(3, 0, 4, held, pointer=b"pointer")
    stored = cache.stored(3, 0)
    assert stored is not None and next(stored) == (0, b"pointer", held)  # a socket sends the pointer's file range
    (read,) = cache.read(3, 2, 1_000, None) or []
    assert type(read) is bytes and read == b"b" * 100
    assert cache.read(3, 0, 1_000, None) == [read] and cache.read(3, 0, 1_000, None)[0] is read  # copied once
    del held, stored
    frame += b"!"  # the cache let go of the frame: it may be resized again
    assert cache.size_bytes == 100


def test_a_batch_over_the_budget_is_not_cached_and_reads_go_to_the_store() -> None:
    cache = TailCache(budget_bytes=100)
    cache.add(1, 0, 0, b"x" * 50)
    cache.add(1, 1, 1, b"y" * 101)
    assert cache.read(1, 0, 1_000, None) is None and cache.size_bytes == 0


def test_batch_base_offsets_survive_the_cache(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")
    try:
        new_topic(store, "t", 1)
        (partition_id,) = store.state("catalog", topic_key("t")).partition_ids
        for _ in range(3):
            produce(store, partition_id, record_count=5)
        store.commit()
        assert [batch_base_offset(b) for b in store.read_batches(partition_id, 6, 10_000)] == [5, 10]
    finally:
        store.close()


def test_dropped_partitions_leave_the_eviction_order_oldest_first_and_bounded() -> None:
    """A drop empties its run where it stands; the batches cached after it still leave in the order they came."""
    cache = TailCache(budget_bytes=400)
    for partition_id in (1, 2, 3):
        cache.add(partition_id, 0, 0, bytes([partition_id]) * 100)
    cache.drop(2)
    cache.add(2, 5, 5, b"n" * 100)  # a new run for partition 2, after 1 and 3's batches
    cache.add(4, 0, 0, b"f" * 100)
    assert cache.size_bytes == 400
    cache.add(4, 1, 1, b"g" * 100)
    assert cache.read(1, 0, 1_000, None) is None, "the oldest live batch left first"
    assert cache.read(3, 0, 1_000, None) == [bytes([3]) * 100]
    cache.add(4, 2, 2, b"h" * 100)
    assert cache.read(3, 0, 1_000, None) is None, "the dropped run's place in the order evicted nothing"
    assert cache.read(2, 5, 1_000, None) == [b"n" * 100] and cache.size_bytes == 400
    for partition_id in range(10, 20_010):  # topics created and deleted, the budget never reached
        cache.add(partition_id, 0, 0, b"x")
        cache.drop(partition_id)
    assert len(cache._order) < 2_000, "entries of dropped runs are swept out, not kept forever"
    assert cache.read(4, 0, 1_000, None) == [b"f" * 100, b"g" * 100, b"h" * 100]


def test_a_partition_whose_last_cached_batch_was_evicted_keeps_no_run() -> None:
    """Every partition appended to once would otherwise keep an empty run (a few objects the garbage collector walks)
    for the broker's life; a later append starts a new one."""
    cache = TailCache(budget_bytes=250)
    cache.add(1, 0, 0, b"a" * 100)
    cache.add(2, 0, 4, b"b" * 100)
    cache.add(2, 5, 9, b"c" * 100)  # over the budget: partition 1's only batch leaves
    assert set(cache._runs) == {2}
    assert cache.read(1, 0, 1_000, None) is None
    cache.add(1, 1, 1, b"d" * 100)  # partition 2's first batch leaves; its run stays with the second
    assert set(cache._runs) == {1, 2}
    assert cache.read(1, 1, 1_000, None) == [b"d" * 100]
    assert cache.read(2, 0, 1_000, None) is None and cache.read(2, 5, 1_000, None) == [b"c" * 100]
    assert cache.size_bytes == 200

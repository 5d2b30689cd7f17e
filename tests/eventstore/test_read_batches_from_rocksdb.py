"""`read_batches` answered by RocksDB itself (no tail cache), from a batch's base offset and from inside a batch.

A read at a batch's base offset (a consumer reading on) takes a plain seek; one inside a batch needs the batch
before the key (``seek_for_prev``). Both must find the batch holding the offset (issue 18).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.eventstore.rocksdb import RocksEventStore

from tests.eventstore.support import batch_base_offset, new_topic, produce

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

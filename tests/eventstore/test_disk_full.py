"""A commit that fails for want of space: nothing it carried is kept, memory is reloaded from disk, reads go
on, writes are refused until the store reopens, and once space is freed writing resumes with every
committed batch still there. A real ENOSPC, from a small tmpfs (`small_disk`), not an injected error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.core.errors import StorageUnavailable
from logwright.core.log.partition_log import partition_key
from logwright.eventstore.check import check_store
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import StoreFailed, StoreLost

from .small_disk import fill, small_tmpfs
from .support import batch_base_offset, new_topic, produce

PAYLOAD = 60_000


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", 16) as path:
        yield path


PARTITION = 0


def next_offset(store: RocksEventStore, partition_id: int = PARTITION) -> int:
    return int(store.state("partitions", partition_key(partition_id)).next_offset)


def all_base_offsets(store: RocksEventStore, partition_id: int = PARTITION) -> list[int]:
    offsets, start = [], 0
    while start < next_offset(store, partition_id):
        batches = store.read_batches(partition_id, start, 1 << 30)
        offsets += [batch_base_offset(batch) for batch in batches]
        start = batch_base_offset(batches[-1]) + 10
    return offsets


def write_until_full(store: RocksEventStore) -> tuple[int, StoreFailed]:
    """Commit one produce at a time until a commit fails; returns the committed next offset and the error."""
    for _ in range(1_000):
        committed = next_offset(store)
        produce(store, PARTITION, payload_size=PAYLOAD)
        try:
            store.commit()
        except StoreFailed as error:
            return committed, error
    raise AssertionError("the disk never filled up")


def test_a_failed_commit_keeps_nothing_reloads_state_and_recovers_once_space_is_freed(disk: Path) -> None:
    store = RocksEventStore(disk / "store")
    try:
        assert new_topic(store, "t").partition_ids == (PARTITION,)
        produce(store, PARTITION, payload_size=PAYLOAD)
        store.commit()
        filler = fill(disk, leave_bytes=2 * 1024 * 1024)
        committed, error = write_until_full(store)

        assert isinstance(error, StorageUnavailable)
        assert "No space left on device" in str(error)
        assert store.failed is not None, "a full disk cannot even be reopened for writing: read-only until freed"
        assert next_offset(store) == committed, "the staged append was dropped: memory matches the disk"
        assert store.last_sequence == store.committed_sequence
        assert all_base_offsets(store) == list(range(0, committed, 10)), "reads keep working"
        with pytest.raises(StoreFailed, match="refuses writes"):
            produce(store, PARTITION)
        assert store.reopen() is False, "still full"

        filler.unlink()
        assert store.reopen() is True
        assert store.failed is None
        assert next_offset(store) == committed
        produce(store, PARTITION, payload_size=PAYLOAD)
        store.commit()
        assert all_base_offsets(store) == list(range(0, committed + 10, 10))
        assert check_store(store).consistent
    finally:
        store.close()
    reopened = RocksEventStore(disk / "store")
    try:
        assert next_offset(reopened) == committed + 10
        assert check_store(reopened).consistent
    finally:
        reopened.close()


def test_reload_listeners_run_after_a_reopen(disk: Path) -> None:
    store = RocksEventStore(disk / "store")
    reloads: list[int] = []
    store.add_reload_listener(lambda: reloads.append(store.last_sequence))
    try:
        new_topic(store, "t")
        store.commit()
        assert store.reopen() is True
        assert reloads == [store.last_sequence]
    finally:
        store.close()


def test_a_reopen_never_starts_an_empty_database_where_the_old_one_went_missing(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "store")
    new_topic(store, "t")
    store.commit()
    (tmp_path / "store").rename(tmp_path / "moved")  # as if the disk were unmounted under the broker
    with pytest.raises(StoreLost, match="cannot open"):
        store.reopen()
    assert not (tmp_path / "store" / "CURRENT").exists(), "no new database (RocksDB may create the folder for its LOG)"
    store.close()
    assert RocksEventStore(tmp_path / "moved").last_sequence == 1

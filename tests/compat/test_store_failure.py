"""The broker's side of a failed commit, on a real full disk (a small tmpfs, `tests.eventstore.small_disk`):
every request waiting on the commit fails with the storage error, a request that staged before the failure
and asks for durability only later fails too (its effects were dropped, even if the store is writable again
by then), and the store is retried on the broker clock once space is freed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.compat.broker import Broker
from logwright.compat.broker_commits import STORE_RETRY_MS
from logwright.core.clock import ManualClock
from logwright.core.cursors.cursor import CursorState
from logwright.core.errors import StorageUnavailable
from logwright.core.events import OffsetCommitted, RecordsAppended, ShareGroupCreated, SubscriptionCreated
from logwright.core.groups.group_offsets import GROUP_OFFSETS, group_key
from logwright.core.log.partition_log import append_batch
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore

from tests.eventstore.small_disk import fill, small_tmpfs
from tests.eventstore.support import fake_batch


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", 16) as path:
        yield path


def stage_records(broker: Broker, partition_id: int, payload_size: int) -> None:
    decided = append_batch(broker.partition(partition_id), 10, 0, 1_000)
    data = fake_batch(decided.base_offset, 10, b"x" * payload_size, 1_000)
    broker.stage([RecordsAppended(partition_id, decided.base_offset, 10, len(data), 1_000)],
                 [StoredBatch(partition_id, decided.base_offset, data)])


def test_a_failed_commit_fails_every_request_that_staged_before_it(disk: Path) -> None:
    store = RocksEventStore(disk / "store")
    clock = ManualClock()
    try:
        asyncio.run(_scenario(Broker(store, clock=clock), clock, disk))
    finally:
        store.close()


async def _scenario(broker: Broker, clock: ManualClock, disk: Path) -> None:
    [partition_id] = broker.create_topic("t", 1).partition_ids
    await broker.durable()
    filler = fill(disk, leave_bytes=1 << 20)
    commit_failed = asyncio.Event()

    async def commits_an_offset_then_waits() -> None:
        broker.stage([OffsetCommitted("g", "t", 0, 5)])
        await commit_failed.wait()
        await broker.durable()

    async def produces_more_than_fits() -> None:
        stage_records(broker, partition_id, 3_000_000)
        try:
            await broker.durable()
        finally:
            commit_failed.set()

    early = asyncio.ensure_future(commits_an_offset_then_waits())
    big = asyncio.ensure_future(produces_more_than_fits())
    with pytest.raises(StorageUnavailable, match="No space left on device"):
        await big
    assert broker.high_watermark(partition_id) == 0
    assert broker.store.state(GROUP_OFFSETS.name, group_key("g")) is None, "the dropped offset commit is not in memory"

    filler.unlink()
    clock.advance(STORE_RETRY_MS)
    stage_records(broker, partition_id, 100)  # the retry reopens the store for writing
    await broker.durable()
    assert broker.store.failed is None
    assert broker.high_watermark(partition_id) == 10

    with pytest.raises(StorageUnavailable, match="a commit failed after this request staged"):
        await early


def test_a_state_row_that_fails_to_encode_fails_one_commit_and_the_store_stays_writable(tmp_path: Path) -> None:
    """A projection row the codec refuses inside the commit (a hostile AlterShareGroupOffsets made one in the fuzz
    test, seed 202: a cursor at -2**63 - 1, which msgpack could not write before the codec learnt big integers; here
    the codec is made to refuse a cursor). The commit fails alone and the store reopens for writing at once. It used
    to stay read-only for good: the failed call's frames held a column family handle, which kept the database's LOCK
    while the store opened it again."""
    store = RocksEventStore(tmp_path / "store")
    encode = store._types.encode

    def refusing_cursors(value: object) -> bytes:
        if isinstance(value, CursorState):
            raise TypeError("the codec refuses this cursor")
        return encode(value)

    store._types.encode = refusing_cursors  # type: ignore[method-assign]
    try:
        asyncio.run(_unwritable_row(Broker(store, clock=ManualClock())))
    finally:
        store.close()


async def _unwritable_row(broker: Broker) -> None:
    [partition_id] = broker.create_topic("t", 1).partition_ids
    await broker.durable()
    broker.stage([ShareGroupCreated("g", ""), SubscriptionCreated("g", partition_id, "t", 0)])
    with pytest.raises(StorageUnavailable, match="the codec refuses this cursor"):
        await broker.durable()
    assert broker.store.failed is None, f"the store stayed read-only: {broker.store.failed}"
    stage_records(broker, partition_id, 100)
    await broker.durable()
    assert broker.high_watermark(partition_id) == 10
